#!/usr/bin/env bash
# The Debian packages (debian/, docs/packaging.md), built from a copy of the tree as a user
# would build them: dpkg-buildpackage -b must give libpccx0, libpccx-dev, pccx-tools and
# pccx-dkms, each with what it is for; lintian must report no error and no warning (a warning
# that cannot be fixed is overridden in debian/*.lintian-overrides, with the reason); the
# library, development and tools packages unpacked into a scratch root must run pccx --help
# and build and run docs/example.c (shared and static); the DKMS source tree must build
# pccx.ko against the installed kernel headers. Before any of that, without building:
# dkms.conf names the module Kbuild builds, one version is everywhere (pccx.pc, dkms.conf,
# MODULE_VERSION, debian/changelog), docs/driver.md has every module parameter, and the udev
# rule is well formed.
# About 30 s of a 2-core machine's time: the package build is most of it.
#   tests/scripts/debian_packages.sh BUILD
. "$(dirname "$0")/lib/cli.sh"
cli_init debian_packages "$@"

check() { checks=$((checks + 1)); }
need() { check; grep -qE -- "$2" "$1" || fail "$3"; }

# ---- without building ---------------------------------------------------------------------
version=$(sed -n 's/^Version: *//p' scripts/pccx.pc.in)
conf=driver/dkms.conf
cval() { sed -n "s/^$1=\"\\(.*\\)\"\$/\\1/p" "$conf"; }
check
[ "$(cval PACKAGE_NAME)" = pccx ] || fail "$conf: PACKAGE_NAME '$(cval PACKAGE_NAME)', not pccx"
check
[ "$(cval PACKAGE_VERSION)" = "$version" ] ||
  fail "$conf: PACKAGE_VERSION '$(cval PACKAGE_VERSION)', pccx.pc's Version is '$version'"
# the module dkms installs is the one Kbuild builds (obj-m's first), and the driver says the version
kmod=$(sed -n 's/^obj-m[[:space:]]*:=[[:space:]]*\([a-z_]*\)\.o.*/\1/p' driver/Kbuild)
check
[ "$(cval 'BUILT_MODULE_NAME\[0\]')" = "$kmod" ] && [ "$kmod" = pccx ] ||
  fail "$conf: BUILT_MODULE_NAME[0] '$(cval 'BUILT_MODULE_NAME\[0\]')', Kbuild builds '$kmod'"
check
[ "$(cval 'DEST_MODULE_LOCATION\[0\]')" = /updates/dkms ] || fail "$conf: DEST_MODULE_LOCATION[0]"
check
[ "$(cval AUTOINSTALL)" = yes ] || fail "$conf: AUTOINSTALL is not yes"
need "$conf" '^MAKE\[0\]="make -C \$\{kernel_source_dir\} M=\$\{dkms_tree\}/\$\{PACKAGE_NAME\}/\$\{PACKAGE_VERSION\}/build modules"$' \
  "$conf: MAKE[0] does not build against \${kernel_source_dir} in the DKMS build tree"
modver=$(sed -n 's/^MODULE_VERSION("\(.*\)");/\1/p' driver/pccx_drv.c)
check
[ "$modver" = "$version" ] || fail "driver/pccx_drv.c: MODULE_VERSION '$modver', not '$version'"
debver=$(dpkg-parsechangelog -l debian/changelog -S Version 2>/dev/null)
check
[ "${debver%-*}" = "$version" ] || fail "debian/changelog: version '$debver', not '$version'"

# every module parameter (name, type) is a row of a table in docs/driver.md
params=$(grep -hoE 'module_param(_named)?\([^)]*\)' driver/*.c |
  sed -E 's/module_param_named\(([a-z_]+), *[a-z_]+, *([a-z]+),.*/\1 \2/;
          s/module_param\(([a-z_]+), *([a-z]+),.*/\1 \2/')
check
[ "$(wc -l <<<"$params")" -ge 6 ] || fail "found only these module parameters: $params"
while read -r name type; do
  check
  grep -qE "^\| \`$name\` \| $type\b" docs/driver.md ||
    fail "docs/driver.md has no row '| \`$name\` | $type ...' for the module parameter $name"
done <<<"$params"

# the udev rule: udevadm verify where udev has it (systemd 253 and later), else its syntax
# here: comma-separated KEY[{attr}]OP"value", keys udev knows, match keys compared with ==/!=
rule=driver/60-pccx.rules
check
if command -v udevadm >/dev/null && udevadm verify --help >/dev/null 2>&1; then
  udevadm verify "$rule" >"$T/udev" 2>&1 || fail "udevadm verify $rule: $(cat "$T/udev")"
else
  awk '
    /^[[:space:]]*(#|$)/ { next }
    {
      n = split($0, f, /,[[:space:]]*/)
      for (i = 1; i <= n; i++) {
        if (!match(f[i], /^[A-Z_]+(\{[^}]+\})?(==|!=|\+=|-=|:=|=)"[^"]*"$/)) {
          print FILENAME ":" NR ": not KEY OP \"value\": " f[i]; bad = 1; continue
        }
        key = f[i]; sub(/[{=!+:-].*/, "", key)
        op = f[i]; sub(/^[A-Z_]+(\{[^}]+\})?/, "", op); sub(/".*/, "", op)
        if (key !~ /^(ACTION|DEVPATH|KERNEL|KERNELS|NAME|SYMLINK|SUBSYSTEM|SUBSYSTEMS|DRIVER|DRIVERS|ATTR|ATTRS|ENV|TAG|TAGS|TEST|PROGRAM|RESULT|OWNER|GROUP|MODE|OPTIONS|RUN|LABEL|GOTO|IMPORT|CONST|SYSCTL|SECLABEL|IMPORT|DEVTYPE)$/) {
          print FILENAME ":" NR ": unknown key " key; bad = 1
        }
        if (key ~ /^(KERNEL|SUBSYSTEM|ACTION|DEVPATH|DRIVER|KERNELS|SUBSYSTEMS|DRIVERS)$/ && op !~ /^(==|!=)$/) {
          print FILENAME ":" NR ": " key " is a match key, compared with == or !=, not " op; bad = 1
        }
        if (key ~ /^(OWNER|GROUP|MODE|NAME)$/ && op !~ /^(=|:=)$/) {
          print FILENAME ":" NR ": " key " is assigned with = or :=, not " op; bad = 1
        }
      }
    }
    END { exit bad }' "$rule" >"$T/udev" || fail "$rule: $(cat "$T/udev")"
fi
need "$rule" '^KERNEL=="pccx", SUBSYSTEM=="misc", GROUP="pccx", MODE="0660"$' \
  "$rule: no rule giving /dev/pccx to the group pccx with mode 0660"

# ---- the packages -------------------------------------------------------------------------
missing=""
for c in dpkg-buildpackage dh dh_dkms lintian fakeroot; do command -v "$c" >/dev/null || missing+=" $c"; done
if [ -n "$missing" ]; then
  fail "missing$missing: scripts/deps.sh test installs debhelper, dh-dkms, lintian, fakeroot"
  cli_done
fi

# a copy of the tree as it is (tracked and new files, not what .gitignore leaves out):
# dpkg-buildpackage writes its packages into the parent directory
src=$T/src/pccx-$version
mkdir -p "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -xf - -C "$src"
else
  tar --exclude=./build --exclude=./.cache --exclude=./.git -cf - . | tar -xf - -C "$src"
fi
# the source package too (from the clean copy), so that lintian sees debian/ itself
check
(cd "$src" && dpkg-source -b .) >"$T/source.log" 2>&1 || fail "dpkg-source -b: $(tail -n 20 "$T/source.log")"
check
start=$(date +%s)
if ! (cd "$src" && DEB_BUILD_OPTIONS="parallel=2" timeout 1200 dpkg-buildpackage -b -us -uc) \
    >"$T/build.log" 2>&1; then
  fail "dpkg-buildpackage -b -us -uc failed: $(tail -n 30 "$T/build.log")"
  cli_done
fi
echo "dpkg-buildpackage: $(($(date +%s) - start)) s"

arch=$(dpkg-architecture -qDEB_HOST_ARCH)
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
major=${version%%.*}
declare -A deb=([libpccx$major]=$arch [libpccx-dev]=$arch [pccx-tools]=$arch [pccx-dkms]=all)
for p in "${!deb[@]}"; do
  f=$T/src/${p}_${debver}_${deb[$p]}.deb
  check
  if [ -f "$f" ]; then
    dpkg-deb -c "$f" | awk '{ sub(/^\.\//, "/", $6); print $6 ($7 == "->" ? " -> " $8 : "") }' >"$T/$p.list"
    echo "$p: $(stat -c %s "$f") bytes, $(grep -vc '/$' "$T/$p.list") files"
  else
    fail "no package $f"; : >"$T/$p.list"
  fi
done
field() { dpkg-deb -f "$T/src/${1}_${debver}_${deb[$1]}.deb" "$2" 2>/dev/null; }
has_path() { check; grep -qE -- "^$2\$" "$T/$1.list" || fail "$1 lacks $2"; }

# libpccx0: the library under its soname, nothing else but docs
lib=libpccx$major
has_path "$lib" "/usr/lib/$ma/libpccx\.so\.$version"
has_path "$lib" "/usr/lib/$ma/libpccx\.so\.$major -> libpccx\.so\.$version"
check
stray=$(grep -vE '/$|^/usr/lib/[^/]+/libpccx\.so\.|^/usr/share/doc/' "$T/$lib.list")
[ -z "$stray" ] || fail "$lib holds more than the library: $stray"
# libpccx-dev: headers, static libraries, the link for -lpccx, pccx.pc, libpccx(3), the example
for h in host/include/pccx/*.h; do has_path libpccx-dev "/usr/include/pccx/${h##*/}"; done
has_path libpccx-dev "/usr/include/pccx/uapi\.h"
for a in libpccx libpccx_sim libpccx_ref libpccx_base libpccx_isa libpccx_num; do
  has_path libpccx-dev "/usr/lib/$ma/$a\.a"
done
has_path libpccx-dev "/usr/lib/$ma/libpccx\.so -> libpccx\.so\.$major"
has_path libpccx-dev "/usr/lib/$ma/pkgconfig/pccx\.pc"
has_path libpccx-dev "/usr/share/doc/libpccx-dev/examples/example\.c"
check
field libpccx-dev Depends | grep -qF "$lib (= $debver)" ||
  fail "libpccx-dev does not depend on $lib (= $debver): $(field libpccx-dev Depends)"
# pccx-tools: the command and its manual page
has_path pccx-tools "/usr/bin/pccx"
for m in man/*.1.in; do [ -e "$m" ] && has_path pccx-tools "/usr/share/man/man1/$(basename "$m" .in)\.gz"; done
for m in man/*.3.in; do [ -e "$m" ] && has_path libpccx-dev "/usr/share/man/man3/$(basename "$m" .in)\.gz"; done
for m in man/*.4.in; do [ -e "$m" ] && has_path pccx-dkms "/usr/share/man/man4/$(basename "$m" .in)\.gz"; done
# pccx-dkms: the DKMS tree (dkms.conf, Kbuild, every driver source, the shared isa/ sources
# Kbuild names), the udev rule, the group and dkms in the maintainer scripts
d=/usr/src/pccx-$version
has_path pccx-dkms "$d/dkms\.conf"
has_path pccx-dkms "$d/Kbuild"
has_path pccx-dkms "$d/include/uapi/pccx\.h"
for c in driver/*.c driver/*.h; do has_path pccx-dkms "$d/${c#driver/}"; done
for o in $(grep -oE 'isa/[a-z_]+\.o' driver/Kbuild); do has_path pccx-dkms "$d/${o%.o}\.c"; done
has_path pccx-dkms "/lib/udev/rules\.d/60-pccx\.rules"
check
field pccx-dkms Depends | grep -qE '(^|, )dkms( |,|$)' || fail "pccx-dkms does not depend on dkms"
check
field pccx-dkms Depends | grep -qE '(^|, )adduser( |,|$)' ||
  fail "pccx-dkms does not depend on adduser (its postinst runs addgroup)"
dpkg-deb -e "$T/src/pccx-dkms_${debver}_all.deb" "$T/dkms-ctl" 2>/dev/null
need "$T/dkms-ctl/postinst" 'addgroup --system( --quiet)? pccx' "pccx-dkms's postinst creates no pccx group"
need "$T/dkms-ctl/postinst" 'dkms (add|install|build)|common\.postinst' "pccx-dkms's postinst does not run dkms"
need "$T/dkms-ctl/prerm" 'dkms remove' "pccx-dkms's prerm does not remove the module from dkms"

# lintian, the source package and the four: no error, no warning (informational tags are
# printed, not counted)
debs=("$T/src/pccx_$debver.dsc")
for p in "${!deb[@]}"; do debs+=("$T/src/${p}_${debver}_${deb[$p]}.deb"); done
check
timeout 600 lintian --display-info "${debs[@]}" >"$T/lintian" 2>&1
lrc=$?
grep -E '^[EWI]: ' "$T/lintian" | sed 's/^/lintian: /'
if grep -qE '^[EW]: ' "$T/lintian" || [ $lrc -gt 1 ] || { [ $lrc -ne 0 ] && ! grep -q '^[EWI]: ' "$T/lintian"; }; then
  fail "lintian (exit $lrc): $(grep -vE '^(I|N):|^running with root' "$T/lintian" | head -n 20)"
fi

# the library, development and tools packages unpacked into a scratch root, used from there
root=$T/root
for p in "$lib" libpccx-dev pccx-tools; do dpkg -x "$T/src/${p}_${debver}_${deb[$p]}.deb" "$root"; done
run env LD_LIBRARY_PATH="$root/usr/lib/$ma" "$root/usr/bin/pccx" --help
[ "$rc" -eq 0 ] && grep -q 'pccx' "$T/out" || fail "the packaged pccx --help exited $rc: $(head -c 300 "$T/err")"
export PKG_CONFIG_PATH="$root/usr/lib/$ma/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
export PKG_CONFIG_LIBDIR="$root/usr/lib/$ma/pkgconfig"
run cc -std=c11 -Wall -Wextra -Werror docs/example.c $(pkg-config --cflags --libs pccx) -o "$T/ex-shared"
[ "$rc" -eq 0 ] || fail "the example does not build against the packaged libpccx.so: $(head -c 600 "$T/err")"
run cc -static -std=c11 -Wall -Wextra -Werror docs/example.c \
  $(pkg-config --cflags --libs --static pccx) -o "$T/ex-static"
[ "$rc" -eq 0 ] || fail "the example does not build against the packaged static libraries: $(head -c 600 "$T/err")"
if [ -x "$T/ex-shared" ] && [ -x "$T/ex-static" ]; then
  check
  readelf -d "$T/ex-shared" | grep -q "NEEDED.*\[libpccx\.so\.$major\]" ||
    fail "the shared example does not need libpccx.so.$major"
  LD_LIBRARY_PATH="$root/usr/lib/$ma" ldd "$T/ex-shared" | grep -qF "$root/usr/lib/$ma/libpccx.so.$major" ||
    fail "the shared example does not load the packaged library"
  check
  ! readelf -d "$T/ex-static" | grep -q NEEDED || fail "the static example needs shared libraries"
  run env LD_LIBRARY_PATH="$root/usr/lib/$ma" "$T/ex-shared"
  [ "$rc" -eq 0 ] && grep -q "all stages bit-exact" "$T/out" || fail "the shared example: $(head -c 300 "$T/err")"
  cp "$T/out" "$T/out-shared"
  run "$T/ex-static"
  [ "$rc" -eq 0 ] && cmp -s "$T/out" "$T/out-shared" || fail "the static example printed other output"
fi

# the DKMS tree from the package builds pccx.ko against the installed kernel headers, with
# dkms.conf's version and every parameter docs/driver.md lists
kdir=$(ls -d /usr/src/linux-headers-*-"$arch" 2>/dev/null | sort -V | tail -n 1)
check
if [ -z "$kdir" ]; then
  fail "no kernel headers (/usr/src/linux-headers-*-$arch; scripts/deps.sh test installs them)"
else
  dpkg -x "$T/src/pccx-dkms_${debver}_all.deb" "$T/dkms"
  if timeout 600 make -C "$kdir" M="$T/dkms$d" -j2 modules >"$T/kbuild.log" 2>&1 &&
      [ -f "$T/dkms$d/$kmod.ko" ]; then
    check
    [ "$(modinfo -F version "$T/dkms$d/$kmod.ko")" = "$version" ] ||
      fail "$kmod.ko from the DKMS tree has version '$(modinfo -F version "$T/dkms$d/$kmod.ko")'"
    check
    kparams=$(modinfo -F parm "$T/dkms$d/$kmod.ko" | sed 's/:.*//' | sort)
    # the module's own sources: Kbuild's $kmod-y objects outside isa/
    ksrc=$(sed -n "/^$kmod-y/,/[^\\\\]\$/p" driver/Kbuild | grep -oE '(^|[ =])[a-z_]+\.o' |
      sed -E 's/^[ =]*/driver\//; s/\.o$/.c/')
    [ "$kparams" = "$(grep -hoE 'module_param(_named)?\([a-z_]+' $ksrc | sed 's/.*(//' | sort)" ] ||
      fail "the parameters of $kmod.ko ($kparams) are not those of its sources ($ksrc)"
  else
    fail "the DKMS tree does not build against $kdir: $(tail -n 20 "$T/kbuild.log")"
  fi
fi

cli_done
