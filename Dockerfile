# amqp-bridge container image: multi-stage, slim Python base, non-root user.
#
#   docker build -t amqp-bridge .
#   docker run -v $PWD/config.yaml:/etc/amqp-bridge/config.yaml:ro \
#              -e LEGACY_PASSWORD -p 9464:9464 amqp-bridge
#
# The configuration is read from /etc/amqp-bridge/config.yaml (mount it; secrets
# come from the environment or mounted files). Put `metrics: {bind: "0.0.0.0:9464"}`
# in it: the health check asks http://127.0.0.1:9464/healthz. The PySpark pipeline
# is not in this image (install amqp-bridge[spark] where Spark runs).

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY amqp010 ./amqp010
COPY amqp091 ./amqp091
COPY bridge ./bridge
COPY mappings ./mappings
COPY pipeline ./pipeline
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
LABEL org.opencontainers.image.title="amqp-bridge" \
      org.opencontainers.image.description="AMQP 1.0 <-> AMQP 0-10 bridge with CloudEvents mapping" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin bridge
COPY --from=build /install /usr/local
COPY config.example.yaml /etc/amqp-bridge/config.example.yaml
USER 10001
# 5682: the 0-10 façade listener of the example configuration; 9464: metrics and health
EXPOSE 5682 9464
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:9464/healthz', timeout=2).status != 200)"]
ENTRYPOINT ["amqp-bridge", "run", "-c", "/etc/amqp-bridge/config.yaml"]
