# debian-slim.sh, sourced by hack/images.sh and hack/conformance-build.sh:
# debian_slim, mmdebstrap's options for a slim, reproducible Debian root
# filesystem as a tar: the essential variant, merged /usr, no documentation
# but copyright files, no man pages, locales or shell completions, no apt
# caches or lists, no machine id, hostname or resolv.conf. What dpkg would put
# under the excluded paths is never unpacked. Each script adds its packages
# (--include) and what it does with /var/log.
debian_slim=(
  --variant=essential --format=tar
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*'
  --dpkgopt='path-exclude=/usr/share/bash-completion/*' --dpkgopt='path-exclude=/usr/share/zsh/*'
  --dpkgopt='path-exclude=/usr/lib/*/gconv/*'
  --customize-hook='rm -rf "$1"/var/cache/* "$1"/var/lib/apt/lists/* "$1"/var/lib/dpkg/*-old "$1"/etc/*-'
  --customize-hook='rm -f "$1"/etc/machine-id "$1"/etc/hostname "$1"/etc/resolv.conf "$1"/etc/apt/apt.conf.d/99mmdebstrap'
)
