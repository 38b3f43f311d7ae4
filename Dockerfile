# syntax=docker/dockerfile:1

# Build: a static binary, so the runtime image needs no Go and no libc match.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -o /vigil ./cmd/server

# Run: ca-certificates so HTTPS targets and webhooks verify; a non-root user
# whose home holds the embedded PostgreSQL's data when no DATABASE_URL is set.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --create-home --home-dir /var/lib/vigil vigil
COPY --from=build /vigil /vigil
USER vigil:vigil
WORKDIR /var/lib/vigil
EXPOSE 8080
ENTRYPOINT ["/vigil"]
