# Kubernetes deployment targets (deploy/k8s). Included from the top-level Makefile, which defines
# BIN and PYTEST; the defaults below let `make -f deploy/k8s/k8s.mk` work on its own too.
BIN ?= .venv/bin
PYTEST ?= $(BIN)/python -m pytest
K8S_DIR := deploy/k8s
K8S_OVERLAYS := dev single-site multi-site
K8S_OUT := build/k8s

.PHONY: k8s-tools k8s-render k8s-test

k8s-tools: ## kustomize and the Strimzi / Prometheus Operator / cert-manager CRD schemas, from registries (idempotent)
	$(K8S_DIR)/tools.sh install

k8s-render: k8s-tools ## render every overlay into build/k8s/<overlay>.yaml
	@mkdir -p $(K8S_OUT)
	@for overlay in $(K8S_OVERLAYS); do \
	  "$$($(K8S_DIR)/tools.sh kustomize)" build $(K8S_DIR)/overlays/$$overlay > $(K8S_OUT)/$$overlay.yaml; \
	  echo "$(K8S_OUT)/$$overlay.yaml"; \
	done

k8s-test: setup k8s-tools ## offline validation of deploy/k8s (render, schemas, policy checks)
	$(PYTEST) -m deploy -q tests/deploy
