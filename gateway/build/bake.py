"""Bake the install-time snapshot of the interpreter (served by gateway/snapshot.py).

    python -m gateway.build.bake [--root DIR]

The package zip and the standard library exactly as the gateway serves them
(`build_package_zip`, `gateway.stdlib.repack_stored`), then
`node js/boot/bake-snapshot.js`, which boots Pyodide in Node, imports firsttoken and packs the
heap as the page stores it (js/boot/make-snapshot.js, the code the page's own maker runs).
Written to DIR/build/snapshot/. `make` runs this whenever the package's sources, the
snapshot code or the npm packages change.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..snapshot import NAME
from ..static import build_package_zip
from ..stdlib import repack_stored


def bake(root: Path, out: Path | None = None, node: str = "node") -> Path:
    """Bake the snapshot of `root`'s package into `out` (root/build/snapshot)."""
    out = out or root / "build" / "snapshot"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        package = Path(tmp) / "firsttoken.zip"
        package.write_bytes(build_package_zip(root / "py" / "firsttoken"))
        # The standard library as the gateway serves it: the heap remembers its directory.
        stdlib = Path(tmp) / "python_stdlib.zip"
        stdlib.write_bytes(repack_stored((root / "node_modules" / "pyodide" / "python_stdlib.zip").read_bytes()))
        staged = Path(tmp) / NAME
        subprocess.run(
            [node, "--no-warnings", str(root / "js" / "boot" / "bake-snapshot.js"), str(package), str(staged), str(stdlib)],
            check=True, cwd=root,
        )
        # Old label out first, new label last: a label never names a body not its own.
        (out / f"{NAME}.json").unlink(missing_ok=True)
        shutil.move(str(staged), out / NAME)
        shutil.move(str(staged) + ".json", out / f"{NAME}.json")
    return out / NAME


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m gateway.build.bake", description=__doc__.split("\n\n")[0])
    p.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2], help="the checkout to bake for")
    p.add_argument("--node", default=shutil.which("node") or "node")
    args = p.parse_args(argv)
    path = bake(args.root.resolve(), node=args.node)
    print(f"baked {path} ({path.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
