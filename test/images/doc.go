// Package images tests the container images that `make images` builds
// (hack/images.sh), as a node would run them: TestMain builds the three
// archives once into a temporary directory (the programs link from the build
// cache that the other tests fill; the Debian root filesystem comes from
// hack/images.sh's cache after the first run) and loads them with podman
// into a storage root of its own, and the tests run the images with podman
// (runc, --rm, the host network where they talk to each other, every socket
// on 127.0.0.1):
//
//   - the archives: names, tags, users, entrypoints, sizes, and the static
//     images holding their binary and /tmp alone;
//   - every image answers --version with the stamped version;
//   - fake-tp's image serves /readyz and a kubectl list (when kubectl is
//     installed);
//   - partition-dns's image, run as the Deployment runs it (user 65532,
//     read-only root, no capabilities), answers a cluster name over UDP and
//     TCP from a fake-tp image and serves /ready;
//   - node-cache in the same image finds iptables and ip and puts its rules
//     and addresses in place, in a network namespace of its own.
//
// The tests skip, saying why, where podman is not installed or the user is
// not root; .ci/run installs podman and the image tools.
package images
