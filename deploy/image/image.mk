# The OCI image built and run with podman (deploy/image/image.sh). Included from the top-level
# Makefile, which defines PYTEST.
PYTEST ?= .venv/bin/python -m pytest
IMAGE_SH := deploy/image/image.sh
KAFKA_IMAGE_SH := deploy/image/kafka-image.sh

.PHONY: image-tools image image-test kafka-image

image-tools: ## Debian's podman, runc and debootstrap (apt, as root) to build and run the image
	@command -v podman >/dev/null && command -v runc >/dev/null && command -v debootstrap >/dev/null || { \
	  if [ "$$(id -u)" != 0 ]; then echo "install Debian's podman runc debootstrap: sudo apt-get install -y podman runc debootstrap" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman runc debootstrap >/dev/null; }

image: image-tools ## build the image with podman on a debootstrapped Debian base (no registry; ~70 s cold, seconds cached)
	$(IMAGE_SH) build

kafka-image: image-tools ## the container tests' Kafka broker: the image's base + Debian's JRE + the local broker's Maven jars (~20 s cold, <1 s cached)
	$(KAFKA_IMAGE_SH) build >/dev/null

image-test: setup image ## smoke-test the image: uid 10001, read-only root, every service in a container, a short floor
	$(PYTEST) -m image -q tests/image
