# syntax=docker/dockerfile:1
#
# ecagent container image: two static binaries on distroless/static, run
# as a non-root user: the agent ecagent and its real-time cycle process
# ecagent-cycle, which the agent starts from beside itself. Build (from the repository root):
#
#   docker build -t ecagent:dev .
#   docker buildx build --platform linux/amd64,linux/arm64 -t REGISTRY/ecagent:TAG --push .
#
# The image holds only /usr/local/bin/ecagent and /usr/local/bin/ecagent-cycle
# (plus distroless's CA certificates, tzdata and passwd entry for nonroot). Run it the way the
# Helm chart does (helm/ecagent): host network, NET_RAW, SYS_NICE and
# IPC_LOCK, everything else dropped. Plain `docker run ecagent:dev` runs
# the built-in simulated segment without real-time privileges and says so.
#
# The repository's .git is part of the build context on purpose: the Go
# toolchain stamps the version and revision that `ecagent version` and the
# ecagent_build_info metric report from it.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH
# Static: no libc, so the binaries run on distroless/static or scratch.
# test/deploy_image_test.go builds and runs them the same way.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/ecagent ./cmd/ecagent-cycle
# The default cycle.shm's directory, /run/ecagent, the nonroot user's own
# (the Helm chart mounts an in-memory emptyDir there).
RUN mkdir -p /rundir/ecagent

FROM gcr.io/distroless/static-debian12:nonroot
# The agent finds its cycle program beside itself (cycle.program empty).
COPY --from=build /out/ecagent /out/ecagent-cycle /usr/local/bin/
COPY --from=build --chown=65532:65532 --chmod=0750 /rundir/ /run/
# distroless's nonroot user. Kubernetes grants added capabilities only to
# uid 0 (there are no ambient capabilities for pods), so the Helm chart runs
# the container as uid 0 with every capability but NET_RAW, SYS_NICE and
# IPC_LOCK dropped; see "Deployment" in README.md for the trade-off.
USER 65532:65532
# Prometheus /metrics, /healthz, /readyz (metrics.listen).
EXPOSE 9781
ENTRYPOINT ["/usr/local/bin/ecagent"]
CMD ["run"]
