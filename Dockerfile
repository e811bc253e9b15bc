# syntax=docker/dockerfile:1
# One image for every jackpot service: `jackpot gateway|pot|payout|display|audit|resolve ...`.
#
#   docker build -t jackpot:0.1.0 .
#   docker run --rm jackpot:0.1.0 --help
#
# Stage 1 generates the protobuf code from protos/ (as `make proto` does; generated code is never
# committed) and builds the project wheel; the pinned requirements.lock constrains every package.
# Stage 2 is python:3.11-slim with only the virtualenv copied in, running as uid/gid 10001. It
# writes nothing outside the volumes Kubernetes mounts: /var/lib/jackpot (the gateway's spool, a
# PersistentVolume), /run/jackpot (rendered configuration, an emptyDir) and /tmp (an emptyDir), so
# it runs with readOnlyRootFilesystem: true. Bytecode is compiled at build time.
#
# Pin the base image by digest in production: --build-arg PYTHON_IMAGE=python:3.11-slim@sha256:...
# Built here without a registry (`make image`, deploy/image/image.sh), the base is a debootstrapped
# Debian bookworm imported as jackpot-base:bookworm: Debian's Python 3.11.2, not the 3.11.x of
# python:3.11-slim.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_CONSTRAINT=/src/requirements.lock \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY requirements.lock ./
# Build tools in their own venv: grpcio-tools (pinned by the lock) generates the protobuf code.
RUN python -m venv /opt/build \
 && /opt/build/bin/pip install grpcio-tools
COPY pyproject.toml README.md ./
COPY protos/ protos/
COPY services/ services/
RUN rm -rf services/jackpot/v1 \
 && /opt/build/bin/python -m grpc_tools.protoc -Iprotos \
      --python_out=services --pyi_out=services --grpc_python_out=services \
      $(find protos -name '*.proto' | sort) \
 && touch services/jackpot/v1/__init__.py services/jackpot/v1/py.typed \
 && /opt/build/bin/pip wheel --no-deps --wheel-dir /wheels .
# The runtime venv: the project wheel and its runtime dependencies only (no dev extras), then pip
# and setuptools removed so the image carries no installer; last, the SHA-256 manifest of the
# installed package that every service verifies at start (R6). The wheel holds the jackpot package
# only: the floor simulator `jackpot demo` plays is in it (jackpot.sim), the load test and the
# fault suite (loadtest/) are test tooling and never in the image (tests/integration/test_wheel.py).
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install /wheels/jackpot-*.whl \
 && /opt/venv/bin/jackpot --help >/dev/null \
 && /opt/venv/bin/jackpot demo --help >/dev/null \
 && /opt/venv/bin/python -c 'import jackpot.tools.demo, jackpot.sim.floor' \
 && /opt/venv/bin/pip uninstall -y pip setuptools \
 && find /opt/venv -name __pycache__ -prune -exec rm -rf {} + \
 && /opt/venv/bin/jackpot manifest

FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="jackpot" \
      org.opencontainers.image.description="Linked progressive jackpots for casino table games" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
RUN groupadd --system --gid 10001 jackpot \
 && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home \
      --shell /usr/sbin/nologin jackpot \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/jackpot /run/jackpot
COPY --from=builder /opt/venv /opt/venv
USER 10001:10001
WORKDIR /tmp
# Port convention (deploy/k8s/README.md): gRPC 50051 gateway, 50052 pot, 50053 payout,
# 50054 display; display HTTP 8080; metrics 9101-9104 in the same order.
EXPOSE 50051 50052 50053 50054 8080 9101 9102 9103 9104
ENTRYPOINT ["jackpot"]
CMD ["--help"]
