// Package deploycheck has no code of its own: its tests check what the project ships for deploying
// it (the Containerfile and its image, docker-compose.yml, deploy/kubernetes, deploy/systemd)
// against the binary they run. It lives in the tools module so that the service's module does not
// carry the Kubernetes types.
package deploycheck
