#!/usr/bin/env bash
# e2e: ordinary tools over a mounted tree with nested directories, compared with the source tree.
# Proves: readdir(plus) lists exactly the keys (implicit directories from prefixes, sizes from the
# listing), default modes 0644/0755 (writable mount), stat/ENOENT, whole-file reads of sizes around page and part
# boundaries (0 B .. 9 MiB, more than one 8 MiB part), cp -r/tar/md5sum see identical bytes, and a
# BUCKET/PREFIX mount with --uid/--gid/--file-mode/--dir-mode.
source "$(dirname "$0")/lib.sh"
e2e_init tree 200
export LC_ALL=C
SRC="$ROOT/tree"

step "generating a nested tree"
"$PY" - "$SRC" <<'PY'
import os, random, sys
root = sys.argv[1]
rng = random.Random(3)
sizes = [0, 1, 100, 4095, 4096, 4097, 65536, 131073, (1 << 20) + 1, 9 * (1 << 20) + 17]
def put(path, size):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(rng.randbytes(size))
put(os.path.join(root, "README.txt"), 77)
for i, size in enumerate(sizes):
    put(os.path.join(root, f"top-{i:02d}.bin"), size)
for d in range(4):
    for s in range(3):
        for i in range(12):
            put(os.path.join(root, f"dir-{d:02d}", f"sub-{s}", f"file-{i:03d}.dat"),
                rng.choice(sizes[:8]))
        put(os.path.join(root, f"dir-{d:02d}", f"sub-{s}", "deeper", "deepest", "leaf.txt"), 10)
    put(os.path.join(root, f"dir-{d:02d}", "index.json"), 300)
PY
start_gateway
mount_bucket tree
MAIN_PID=$MOUNT_PID
echo "mounted tree at $MNT ($(find "$SRC" -type f | wc -l) files, $(du -sh "$SRC" | cut -f1))"

step "ls -la lists . .. and exactly the source's entries"
ls -la "$MNT" >"$WORK/ls-la" || fail "ls -la failed"
awk 'NR > 1 { print $NF }' "$WORK/ls-la" | sort >"$WORK/ls-names"
{ echo .; echo ..; ls -A "$SRC"; } | sort >"$WORK/src-names"
diff "$WORK/src-names" "$WORK/ls-names" || fail "ls -la names differ from the source"
ls -la "$MNT/dir-02/sub-1" >/dev/null || fail "ls -la of a nested directory"
[[ "$(ls -l "$MNT/top-09.bin" | awk '{ print $1, $5 }')" == "-rw-r--r-- $((9 * 1048576 + 17))" ]] ||
  fail "ls -l of a file: $(ls -l "$MNT/top-09.bin")"

step "find: every path, type and file size equals the source"
(cd "$SRC" && find . -printf '%y\t%s\t%P\n' | awk -F'\t' -v OFS='\t' '$1 == "d" { $2 = "-" } 1' | sort) >"$WORK/src-find"
(cd "$MNT" && find . -printf '%y\t%s\t%P\n' | awk -F'\t' -v OFS='\t' '$1 == "d" { $2 = "-" } 1' | sort) >"$WORK/mnt-find" ||
  fail "find failed"
diff "$WORK/src-find" "$WORK/mnt-find" || fail "find output differs from the source"

step "default modes: files 0644, directories 0755 (the mount point too)"
bad=$(find "$MNT" \( \( -type f ! -perm 0644 \) -o \( -type d ! -perm 0755 \) \) -printf '%m %p\n')
[[ -z "$bad" ]] || fail "unexpected modes: $bad"
[[ "$(stat -c %a "$MNT")" == 755 ]] || fail "mount point mode $(stat -c %a "$MNT")"

step "stat: size, mode, type; ENOENT for a missing name (twice: negative cache)"
[[ "$(stat -c '%s %a %F' "$MNT/dir-01/index.json")" == "300 644 regular file" ]] ||
  fail "stat file: $(stat -c '%s %a %F' "$MNT/dir-01/index.json")"
[[ "$(stat -c '%a %F' "$MNT/dir-01/sub-2/deeper")" == "755 directory" ]] ||
  fail "stat implicit directory: $(stat -c '%a %F' "$MNT/dir-01/sub-2/deeper")"
[[ "$(stat -c %s "$MNT/top-00.bin")" == 0 ]] || fail "empty file size"
for _ in 1 2; do
  out=$(stat "$MNT/dir-01/no-such-file" 2>&1) && fail "stat of a missing name succeeded"
  [[ $out == *"No such file or directory"* ]] || fail "stat of a missing name: $out"
done
ls "$MNT/no-such-dir/" >/dev/null 2>&1 && fail "ls of a missing directory succeeded"
# du counts st_blocks: a 9 MiB file must occupy at least 9 MiB (a 0 here makes du useless)
[[ "$(du -sk "$MNT/top-09.bin" | cut -f1)" -ge 9216 ]] || fail "du -sk of a 9 MiB file: $(du -sk "$MNT/top-09.bin")"

step "cat: whole files byte for byte"
for f in README.txt top-00.bin top-01.bin top-05.bin top-08.bin top-09.bin dir-03/sub-2/deeper/deepest/leaf.txt; do
  cat "$MNT/$f" | cmp - "$SRC/$f" || fail "cat $f differs"
done
(cd "$MNT" && find . -type f -print0 | sort -z | xargs -0 cat) | sha256sum >"$WORK/cat-mnt"
(cd "$SRC" && find . -type f -print0 | sort -z | xargs -0 cat) | sha256sum >"$WORK/cat-src"
cmp -s "$WORK/cat-mnt" "$WORK/cat-src" || fail "cat of every file differs"

step "md5sum over the tree"
(cd "$SRC" && find . -type f -print0 | sort -z | xargs -0 md5sum) >"$WORK/src.md5"
(cd "$MNT" && md5sum -c --quiet "$WORK/src.md5") || fail "md5sum -c on the mount"

step "cp -r out of the mount"
cp -r "$MNT" "$WORK/copy" || fail "cp -r failed"
diff -r "$SRC" "$WORK/copy" || fail "cp -r copy differs from the source"
[[ "$(sums "$SRC")" == "$(sums "$WORK/copy")" ]] || fail "cp -r checksums"

step "tar of the mount extracts to identical content"
mkdir "$WORK/untar"
tar -C "$MNT" -cf - . | tar -C "$WORK/untar" -xf - || fail "tar pipe failed"
diff -r "$SRC" "$WORK/untar" || fail "untarred tree differs from the source"
tar -tf <(tar -C "$MNT" -cf - dir-00) | grep -c '\.dat$' | grep -qx 36 || fail "tar -t file count"

step "BUCKET/PREFIX mount with --uid/--gid/--file-mode/--dir-mode"
MNT2="$WORK/mnt2"
MOUNT_DIR=$MNT2 MOUNT_LOG="$WORK/mount2.log" mount_bucket tree/dir-01 \
  --uid 1234 --gid 2345 --file-mode 0640 --dir-mode 0750
PREFIX_PID=$MOUNT_PID
(cd "$SRC/dir-01" && find . -printf '%y\t%s\t%P\n' | awk -F'\t' -v OFS='\t' '$1 == "d" { $2 = "-" } 1' | sort) >"$WORK/src-find2"
(cd "$MNT2" && find . -printf '%y\t%s\t%P\n' | awk -F'\t' -v OFS='\t' '$1 == "d" { $2 = "-" } 1' | sort) >"$WORK/mnt-find2"
diff "$WORK/src-find2" "$WORK/mnt-find2" || fail "prefix mount lists something else than the prefix"
[[ "$(stat -c '%u %g %a' "$MNT2/index.json")" == "1234 2345 640" ]] ||
  fail "file owner/mode: $(stat -c '%u %g %a' "$MNT2/index.json")"
[[ "$(stat -c '%u %g %a' "$MNT2/sub-0")" == "1234 2345 750" ]] ||
  fail "directory owner/mode: $(stat -c '%u %g %a' "$MNT2/sub-0")"
[[ "$(sums "$SRC/dir-01")" == "$(sums "$MNT2")" ]] || fail "prefix mount checksums"

step "fusermount3 -u: both daemons exit 0"
unmount_and_wait "$MNT2" "$PREFIX_PID"
unmount_and_wait "$MNT" "$MAIN_PID"
echo "PASS"
