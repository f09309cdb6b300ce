// Package deploy holds what deploying bgcheck with Docker needs beside the Dockerfile and
// docker-compose.yml at the repository root (the API proxy's Caddyfile), and the tests that check
// them on machines without a Docker engine: the compose file is loaded with compose-go and its
// services, images, ports, dependencies and environment are checked against the binaries' own
// configuration; the search-attribute script it runs is run against a Temporal dev server; and
// the static build the Dockerfile runs (deploy/build-static.sh) is run and its binaries
// inspected. The package has no code of its own.
package deploy
