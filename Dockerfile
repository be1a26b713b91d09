# amqp-bridge container image (multi-stage; non-root).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bridge ./bridge
COPY mappings ./mappings
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
RUN useradd --system --uid 10001 --no-create-home bridge
COPY --from=build /install /usr/local
USER bridge
ENTRYPOINT ["amqp-bridge"]
CMD ["--help"]
