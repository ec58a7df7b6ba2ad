# Shared by demo.sh and test.sh: the tools a fresh machine needs.

export PATH="$PATH:/usr/local/go/bin"

# need_command NAME WHAT: fail with a clear message when NAME is missing.
need_command() {
	if ! command -v "$1" >/dev/null; then
		echo "$(basename "$0"): $2 is required ($1 not found)" >&2
		exit 1
	fi
}

# ensure_packages installs the Debian packages named that are missing:
# each argument is PACKAGE:PATH, PATH the file whose presence proves it.
ensure_packages() {
	local missing=()
	for spec in "$@"; do
		[ -e "${spec#*:}" ] || missing+=("${spec%%:*}")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "== installing Debian packages: ${missing[*]}"
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# ensure_chromium installs Debian's Chromium (the end-to-end tests and the
# demo drive it) when it is missing.
ensure_chromium() {
	ensure_packages chromium:/usr/lib/chromium/chromium
}

# ensure_npm_dependencies DIR installs DIR's npm dependencies (not its
# devDependencies) from its committed lockfile when any is missing from
# DIR/node_modules. Install scripts do not run: the packages are static
# files to serve.
ensure_npm_dependencies() {
	local dir="$1"
	if (cd "$dir" && node -e '
		const deps = Object.keys(require("./package.json").dependencies ?? {});
		const fs = require("fs");
		process.exit(deps.every((d) => fs.existsSync(`node_modules/${d}/package.json`)) ? 0 : 1);
	'); then
		return 0
	fi
	echo "== npm ci in $dir"
	need_command npm "npm (it comes with Node.js 20)"
	(cd "$dir" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund)
}
