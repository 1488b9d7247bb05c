"""A built wheelhouse laid out in parts of limited size (--split-mib N): OUTPUT/FLAVOUR-parts/part-01, part-02, ...;
a wheel bigger than a part travels as byte chunks, and install.sh joins them again.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from wheelhouse_plan import MIB


def split(files: list[tuple[str, int]], limit: int) -> list[list[tuple[str, int, int]]]:
    """Lay (name, size) files into parts of at most `limit` bytes: first-fit decreasing; a file bigger than
    `limit` becomes byte chunks. Each part is a list of (name, offset, length) pieces; the first part has room
    left for the small files that travel with it (install.sh, SHA256SUMS, manifest) only if the caller reserved it."""
    pieces = []
    for name, size in files:
        offsets = range(0, max(size, 1), limit) if size > limit else [0]
        pieces += [(name, offset, min(limit, size - offset)) for offset in offsets]
    parts: list[list[tuple[str, int, int]]] = []
    free: list[int] = []
    for piece in sorted(pieces, key=lambda piece: (-piece[2], piece[0], piece[1])):
        index = next((i for i, room in enumerate(free) if room >= piece[2]), None)
        if index is None:
            parts.append([])
            free.append(limit)
            index = len(parts) - 1
        parts[index].append(piece)
        free[index] -= piece[2]
    return parts


def write_parts(house: Path, manifest: dict, limit_mib: int) -> Path:
    """OUTPUT/FLAVOUR-parts/part-NN: the wheels in parts of at most `limit_mib` MiB, metadata in part-01."""
    out = house.parent / f"{house.name}-parts"
    shutil.rmtree(out, ignore_errors=True)
    metadata = ["install.sh", "SHA256SUMS", "requirements.txt", "manifest.json"]
    reserve = sum((house / name).stat().st_size for name in metadata) + 64 * 1024
    limit = limit_mib * MIB
    files = [(entry["file"], entry["bytes"]) for entry in manifest["wheels"]]
    # Part 1 holds the metadata: pack the wheels against a limit that leaves room for it, then it goes first.
    parts = split(files, limit - reserve)
    layout = []
    for number, part in enumerate(parts, start=1):
        folder = out / f"part-{number:02d}"
        folder.mkdir(parents=True)
        names = []
        for name, offset, length in sorted(part):
            source = house / "wheels" / name
            whole = offset == 0 and length == source.stat().st_size
            target = folder / (name if whole else f"{name}.chunk-{offset // (limit - reserve):03d}")
            with source.open("rb") as reader, target.open("wb") as writer:
                reader.seek(offset)
                writer.write(reader.read(length))
            names.append(target.name)
        layout.append({"part": folder.name, "files": names, "bytes": sum(p[2] for p in part)})
    manifest["parts"] = {"limit_mib": limit_mib, "count": len(parts), "layout": layout}
    (house / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    for name in metadata:
        shutil.copy2(house / name, out / "part-01" / name)
    return out
