#!/usr/bin/env bash
# Writes docs/completions/ (bash, zsh, fish) and docs/man/ from keyctl's own
# command tree, for keyctl installed as NAME (default kvctl: Debian's keyutils
# owns /usr/bin/keyctl, its completions and keyctl(1); README, "Which `keyctl`
# is this?"). Run after changing a command, an option or its help; a test
# (GeneratedDocsTests) checks the committed files equal what keyctl makes now.
#
#   bash Scripts/generate-completions.sh          # docs for kvctl
#   bash Scripts/generate-completions.sh NAME     # for another name, e.g. to install
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:-kvctl}
swift build --product keyctl >&2
keyctl=$(swift build --show-bin-path)/keyctl
mkdir -p docs/completions docs/man
"$keyctl" completion bash --name "$name" > "docs/completions/$name.bash"
"$keyctl" completion zsh --name "$name" > "docs/completions/_$name"
"$keyctl" completion fish --name "$name" > "docs/completions/$name.fish"
"$keyctl" manual --name "$name" > "docs/man/$name.1"
echo "wrote docs/completions/{$name.bash,_$name,$name.fish} and docs/man/$name.1" >&2
