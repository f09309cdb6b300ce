# syntax=docker/dockerfile:1
#
# One image for every role: bgcheck-api (the default command), bgcheck-worker and bgcheckctl.
# docker-compose.yml picks the command per service. The binaries are static and are built by
# deploy/build-static.sh, which deploy's tests run too: the build they check is the build
# shipped here. deploy/dockerfile_test.go also checks that the Go version below is go.mod's.
#
#   docker build -t bgcheck .
#   docker run --rm bgcheck bgcheckctl help

# The build stage runs on the builder's own platform and cross-compiles (no cgo, so nothing
# more is needed) for the platform asked for: docker buildx build --platform linux/arm64 .
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm AS build
WORKDIR /src

# Modules first, in a layer of their own: a change to the code does not download them again.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/root/.cache/go-build \
	GOOS=$TARGETOS GOARCH=$TARGETARCH sh deploy/build-static.sh /out

# distroless/static: CA certificates (webhook receivers are HTTPS), time zone data, /etc/passwd
# with the nonroot user, and nothing else; no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
ENV PATH=/usr/local/bin:/usr/bin:/bin
# nonroot (65532), by number so that runtimes checking runAsNonRoot can see it.
USER 65532:65532
EXPOSE 8080
CMD ["bgcheck-api"]
