# The JobSet controller image: `jobset controller` on a slim Python, as a non-root user. It
# carries no simulator (the kubesim wheel is not built here).
#   docker build -t ghcr.io/jobset-py/jobset:0.1.0 .
# Only the project's runtime dependencies are installed (no test, bench or sim extras), each
# from requirements/controller.lock at the version and with the hashes recorded there
# (`make lock` regenerates it); the project itself is built from this tree and installed
# without dependencies.
#
# The base image. Pin it by digest for a release build, so that a re-pushed tag cannot change
# what is built:
#   docker build --build-arg \
#     BASE_IMAGE=python:3.11-slim-bookworm@sha256:<digest> .
# where <digest> is what `docker buildx imagetools inspect python:3.11-slim-bookworm` (or
# `crane digest python:3.11-slim-bookworm`) prints for the index. The default names the tag
# only: this repository is built without access to a registry (tools/build_image.sh imports a
# local stand-in under that name), so no digest could be looked up or checked here. Both
# stages use the same base.
ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# The dependencies first (their layer is cached until a lock changes): the runtime ones into
# the image's venv, the build backend into a venv of the build stage only.
COPY requirements/controller.lock requirements/build.lock ./requirements/
RUN python -m venv /opt/jobset \
    && /opt/jobset/bin/pip install --require-hashes --no-deps -r requirements/controller.lock \
    && python -m venv /opt/build \
    && /opt/build/bin/pip install --require-hashes --no-deps -r requirements/build.lock
COPY pyproject.toml README.md LICENSE ./
# The controller (src/jobset) and the helpers it shares with the simulator (src/kubeutil, the
# jobset-kubeutil wheel of packaging/kubeutil); the simulator, src/kubesim, is not copied.
COPY packaging/kubeutil ./packaging/kubeutil
COPY src/jobset ./src/jobset
COPY src/kubeutil ./src/kubeutil
# The targets of the package-data symlinks in src/jobset/data (the CRD and the examples).
COPY config/crd/bases ./config/crd/bases
COPY examples ./examples
RUN /opt/build/bin/pip wheel --no-deps --no-build-isolation --wheel-dir /wheels \
       . ./packaging/kubeutil \
    && /opt/jobset/bin/pip install --no-deps /wheels/jobset_py-*.whl \
       /wheels/jobset_kubeutil-*.whl \
    && /opt/jobset/bin/pip check \
    && /opt/jobset/bin/jobset controller --help > /dev/null

FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="jobset-py" \
      org.opencontainers.image.description="JobSet controller for Kubernetes, in asyncio Python" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/jobset/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
COPY --from=build /opt/jobset /opt/jobset
# 65532: the conventional "nonroot" uid/gid; the Deployment runs as it with a read-only root
# filesystem (an emptyDir on /tmp is the only writable place).
RUN groupadd --system --gid 65532 nonroot \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin nonroot
USER 65532:65532
EXPOSE 8080 8081 9443
ENTRYPOINT ["jobset"]
CMD ["controller"]
