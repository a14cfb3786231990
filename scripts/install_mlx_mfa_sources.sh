#!/usr/bin/env bash
# Puts mlx-mfa's Python package (its source files only) into a site-packages
# folder, for the real-code tests (tests/python/test_real_mlx_mfa.py), which
# load its files with their imports pointed at Alloy.
# mlx-mfa is published as an sdist whose build needs Apple's Metal toolchain
# (and pip would build it even to download it), so the sdist is fetched from
# PyPI's index and checked against the sha256 the index gives; its Python files
# need nothing built.
#   scripts/install_mlx_mfa_sources.sh SITE_PACKAGES [SDIST]
set -euo pipefail
site="$1"
version=2.64.0
sdist="${2:-}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [ -z "$sdist" ]; then
  sdist="$tmp/mlx_mfa-$version.tar.gz"
  python3 - "$version" "$sdist" <<'PY'
import hashlib, re, sys, urllib.request
version, dest = sys.argv[1], sys.argv[2]
# PyPI's simple index (what pip reads): the file's link carries its sha256.
with urllib.request.urlopen("https://pypi.org/simple/mlx-mfa/", timeout=60) as r:
    page = r.read().decode()
found = re.search(r'href="([^"#]*/mlx_mfa-' + re.escape(version) + r'\.tar\.gz)#sha256=([0-9a-f]{64})"', page)
if not found:
    sys.exit(f"mlx-mfa {version}: no sdist on PyPI's index")
with urllib.request.urlopen(found.group(1), timeout=120) as r:
    data = r.read()
if hashlib.sha256(data).hexdigest() != found.group(2):
    sys.exit(f"mlx-mfa {version}: the sdist's sha256 is not the index's")
open(dest, "wb").write(data)
PY
fi
rm -rf "$site/mlx_mfa"
tar xzf "$sdist" -C "$tmp" "mlx_mfa-$version/mlx_mfa"
mv "$tmp/mlx_mfa-$version/mlx_mfa" "$site/mlx_mfa"
