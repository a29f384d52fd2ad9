# The JobSet controller image: `jobset controller` on a slim Python, as a non-root user.
#   docker build -t ghcr.io/jobset-py/jobset:0.1.0 .
# Only the project's runtime dependencies are installed (no test, bench or sim extras).

FROM python:3.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/jobset
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
# The targets of the package-data symlinks in src/jobset/data (the CRD and the examples).
COPY config/crd/bases ./config/crd/bases
COPY examples ./examples
RUN /opt/jobset/bin/pip install . \
    && /opt/jobset/bin/jobset controller --help > /dev/null

FROM python:3.11-slim-bookworm
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
