#!/usr/bin/env python3
"""conformance-image.py: the image half of hack/conformance-build.sh.

Two commands, each taking one JSON spec (a file name, or - for stdin):

  layer SPEC    write a gzip-compressed, reproducible layer tar and print its
                diff ID (the sha256 of the uncompressed tar), also left beside
                it as OUT.diffid. SPEC:
                  {"out": "L.tar.gz",
                   "from_tar": "rootfs.tar",       optional: copy its members
                   "drop_dev": true,               optional: leave out what is under /dev
                   "entries": [                    optional, added after from_tar
                     {"path": "/agnhost", "src": "/build/agnhost", "mode": 493},
                     {"path": "/uploads", "type": "dir", "mode": 493},
                     {"path": "/bin/sh", "type": "symlink", "target": "busybox"},
                     {"path": "/etc/passwd", "content": "root:x:0:0::/root:/bin/sh\\n", "mode": 420}]}
                Every entry belongs to root:root and is dated 1970-01-01, so
                the same inputs give the same bytes; the parent directories of
                the entries are added (0755) when not listed.

  archive SPEC  write a docker-archive (what `docker save` writes, what
                `docker load`, `podman load` and skopeo's docker-archive:
                read): manifest.json, the image config and the layers. SPEC:
                  {"out": "X.tar", "tag": "tpkit-e2e/agnhost:2.0", "arch": "amd64",
                   "layers": [{"file": "L.tar.gz", "diff_id": "sha256:...", "created_by": "..."}],
                   "config": {"Entrypoint": [...], "Cmd": [...], "Env": [...], ...}}
                It prints the image ID (the sha256 of the config).

Nothing but the standard library; nothing runs in a container.
"""
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile

EPOCH = 0
CREATED = "1970-01-01T00:00:00Z"


class HashingWriter(io.RawIOBase):
    """Passes writes on to inner and hashes them (the uncompressed layer)."""

    def __init__(self, inner):
        self.inner = inner
        self.hash = hashlib.sha256()

    def writable(self):
        return True

    def write(self, b):
        self.hash.update(b)
        return self.inner.write(b)


def norm(path):
    """A layer member name: ./-less, no leading or trailing slash."""
    p = path.strip("/")
    while p.startswith("./"):
        p = p[2:]
    return p


def new_info(name, kind, mode):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.mode = mode
    ti.mtime = EPOCH
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = "root"
    return ti


def layer(spec):
    out = spec["out"]
    tmp = out + ".tmp"
    with open(tmp, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz:
            hw = HashingWriter(gz)
            with tarfile.open(fileobj=hw, mode="w|", format=tarfile.PAX_FORMAT, bufsize=1 << 20) as tw:
                seen = set()
                if spec.get("from_tar"):
                    with tarfile.open(spec["from_tar"]) as tr:
                        for m in tr:
                            name = norm(m.name)
                            if name == "":
                                continue
                            if spec.get("drop_dev") and name.startswith("dev/"):
                                continue
                            m.name = name
                            if m.islnk():
                                m.linkname = norm(m.linkname)
                            seen.add(name)
                            tw.addfile(m, tr.extractfile(m) if m.isreg() else None)
                entries = spec.get("entries", [])
                listed = {norm(e["path"]) for e in entries}
                for e in entries:
                    name = norm(e["path"])
                    # parents first
                    parts = name.split("/")
                    for i in range(1, len(parts)):
                        parent = "/".join(parts[:i])
                        if parent not in seen and parent not in listed:
                            tw.addfile(new_info(parent, tarfile.DIRTYPE, 0o755))
                            seen.add(parent)
                    kind = e.get("type", "file")
                    if kind == "dir":
                        tw.addfile(new_info(name, tarfile.DIRTYPE, e.get("mode", 0o755)))
                    elif kind == "symlink":
                        ti = new_info(name, tarfile.SYMTYPE, 0o777)
                        ti.linkname = e["target"]
                        tw.addfile(ti)
                    elif "content" in e:
                        data = e["content"].encode()
                        ti = new_info(name, tarfile.REGTYPE, e.get("mode", 0o644))
                        ti.size = len(data)
                        tw.addfile(ti, io.BytesIO(data))
                    else:
                        ti = new_info(name, tarfile.REGTYPE, e.get("mode", 0o755))
                        ti.size = os.path.getsize(e["src"])
                        with open(e["src"], "rb") as f:
                            tw.addfile(ti, f)
                    seen.add(name)
    os.replace(tmp, out)
    diff_id = "sha256:" + hw.hash.hexdigest()
    with open(out + ".diffid", "w") as f:
        f.write(diff_id + "\n")
    print(diff_id)


def archive(spec):
    out, tag = spec["out"], spec["tag"]
    layers = spec["layers"]
    cfg = {k: v for k, v in spec.get("config", {}).items() if v not in (None, [], {}, "")}
    config = {
        "architecture": spec.get("arch", "amd64"),
        "os": "linux",
        "created": CREATED,
        "config": cfg,
        "rootfs": {"type": "layers", "diff_ids": [l["diff_id"] for l in layers]},
        "history": [{"created": CREATED, "created_by": l.get("created_by", "")} for l in layers],
    }
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    image_id = hashlib.sha256(config_bytes).hexdigest()
    names = []
    for l in layers:
        hexid = l["diff_id"].split(":", 1)[1]
        names.append(f"{hexid}/layer.tar")
    manifest = [{"Config": f"{image_id}.json", "RepoTags": [tag], "Layers": names}]

    def add_bytes(tw, name, data):
        ti = new_info(name, tarfile.REGTYPE, 0o644)
        ti.size = len(data)
        tw.addfile(ti, io.BytesIO(data))

    tmp = out + ".tmp"
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tw:
        add_bytes(tw, f"{image_id}.json", config_bytes)
        done = set()
        for l, name in zip(layers, names):
            if name in done:
                continue
            done.add(name)
            tw.addfile(new_info(name.split("/")[0], tarfile.DIRTYPE, 0o755))
            ti = new_info(name, tarfile.REGTYPE, 0o644)
            ti.size = os.path.getsize(l["file"])
            with open(l["file"], "rb") as f:
                tw.addfile(ti, f)
        add_bytes(tw, "manifest.json", json.dumps(manifest, separators=(",", ":")).encode())
    os.replace(tmp, out)
    print("sha256:" + image_id)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("layer", "archive"):
        sys.exit("usage: conformance-image.py layer|archive SPEC.json|-")
    src = sys.stdin if sys.argv[2] == "-" else open(sys.argv[2])
    spec = json.load(src)
    {"layer": layer, "archive": archive}[sys.argv[1]](spec)


if __name__ == "__main__":
    main()
