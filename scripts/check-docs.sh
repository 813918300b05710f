#!/usr/bin/env bash
# Checks that the documentation names only what exists. Reads README.md, docs/*.md and every
# kernels/**/README.md, and reports one line per problem (doc:line: what) when
#   (a) a repository path in a code span, a code block or a Markdown link does not exist
#       (paths under build/, results/ and nightly/ are made by runs and are skipped, as are absolute
#       paths, ~ and $VAR paths and placeholders with <...>, * or {...}; a path is looked up in the
#       doc's own folder and every folder above it up to the root, k3k/... under kernels/include/;
#       a link target relative to the doc, as Markdown resolves it, and its #anchor among the
#       target's headings; configs/farm.toml, which a user copies from configs/farm.example.toml,
#       counts as present);
#   (b) a `k3tune SUBCOMMAND` is not a subcommand apps/cli/*.cpp defines (add_subcommand), a
#       nested word (`db export`, `table verify`, `tcm status`) is not one of its subcommands, or
#       an option given to it is not one the CLI declares (add_option/add_flag), or a global
#       option (--db, --json, -q, ...) follows a subcommand that does not pass it on (fallthrough);
#   (c) a `k3bench --flag` is not an option the runner declares (harness/runner/);
#   (d) the exit-code table of docs/cli.md does not list exactly the codes of `enum Exit` in
#       apps/cli/app_context.h (and, when docs/k3bench.md has one, the k3bench table exactly
#       those of `enum ExitCode` in harness/runner/errors.h), with the constant names matching.
# Only code (spans and blocks) is read for commands, so prose may say "k3tune" freely. No build,
# no network: it parses the sources. Usage: scripts/check-docs.sh [SOURCE_ROOT]; exit 1 on any
# problem. A ctest (label docs) runs it in the host tree.
set -uo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd) || exit 2
cd "$root" || exit 2

# Files a user makes from a template in the repository (named in the docs, never committed).
user_made=" configs/farm.toml "

failed=0
problem() {
  echo "$1"
  failed=$((failed + 1))
}

# ---- What the code defines ----------------------------------------------------------------------

# Option names of CLI11 declarations in the given files: the first argument of add_option/add_flag,
# and the option spec of a settings table row {"-R,--reps", "key", "help"} (a row whose third
# string is help text, not another argument: argument lists built for a child process do not
# count). Prints "flag NAME" or "option NAME" per line.
declared_options() {
  cat "$@" | tr '\n' ' ' |
    grep -oE '(add_option|add_flag)\( *"[^"]*"|\{ *"!?-[^"]*", *"[a-z_]+", *"[^-"]' |
    while IFS= read -r m; do
      kind=option
      case $m in add_flag*) kind=flag ;; esac
      spec=${m#*\"}
      spec=${spec%%\"*}
      IFS=, read -ra names <<<"$spec"
      for n in "${names[@]}"; do
        n=${n#!}
        n=${n// /}
        case $n in -*) echo "$kind $n" ;; esac
      done
    done
}

declare -A sub_file=()      # top-level k3tune subcommand -> the file that defines it
declare -A sub_children=()  # top-level subcommand -> " child child "
declare -A file_opts=()     # file -> " --opt -o "
declare -A file_flags=()    # file -> the options among those that take no value
declare -A sub_fallthrough=()  # top-level subcommands that accept the global options after them
re_var='^auto\* *([A-Za-z_][A-Za-z0-9_]*) *= *'
re_sub='([A-Za-z_][A-Za-z0-9_]*)(\.|->)add_subcommand\( *"([^"]+)"'
# A command split over files: apps/cli/cmd_SUB_CHILD.cpp that defines no top-level subcommand of its
# own (cmd_table_verify.cpp: `table verify`) is read as part of cmd_SUB.cpp.
declare -A parts=()  # file -> the files read as its text
for f in apps/cli/*.cpp; do parts[$f]=$f; done
for f in apps/cli/cmd_*_*.cpp; do
  base=${f%_*}.cpp
  [ -n "${parts[$base]:-}" ] || continue
  grep -qE '\bapp\.add_subcommand\(' "$f" && continue
  parts[$base]+=" $f"
  unset "parts[$f]"
done
for f in $(printf '%s\n' "${!parts[@]}" | sort); do
  read -ra texts <<<"${parts[$f]}"
  declare -A var_name=()
  subs=$(cat "${texts[@]}" | tr '\n' ' ' |
    grep -oE '(auto\* *[A-Za-z_][A-Za-z0-9_]* *= *)?[A-Za-z_][A-Za-z0-9_]*(\.|->)add_subcommand\( *"[^"]+"')
  # First the variables that hold a subcommand: a helper that adds children to `table` may come
  # before the function that makes `table`.
  while IFS= read -r m; do
    [[ $m =~ $re_var ]] && [[ $m =~ $re_sub ]] || continue
    [[ $m =~ $re_var ]] && var=${BASH_REMATCH[1]}
    [[ $m =~ $re_sub ]] && [ -z "${var_name[$var]:-}" ] && var_name[$var]=${BASH_REMATCH[3]}
  done <<<"$subs"
  while IFS= read -r m; do
    var=""
    if [[ $m =~ $re_var ]]; then var=${BASH_REMATCH[1]}; fi
    [[ $m =~ $re_sub ]] || continue
    receiver=${BASH_REMATCH[1]}
    name=${BASH_REMATCH[3]}
    if [ "$receiver" = app ]; then
      sub_file[$name]=$f
    elif [ -n "${var_name[$receiver]:-}" ]; then
      parent=${var_name[$receiver]}
      sub_children[$parent]="${sub_children[$parent]:- }$name "
    fi
    [ -n "$var" ] && var_name[$var]=$name
  done <<<"$subs"
  # Global options are accepted after a subcommand only where it falls through to the app.
  while IFS= read -r v; do
    v=${v%%-*}
    [ -n "${var_name[$v]:-}" ] && [ -n "${sub_file[${var_name[$v]}]:-}" ] && sub_fallthrough[${var_name[$v]}]=1
  done < <(cat "${texts[@]}" | grep -oE '[A-Za-z_][A-Za-z0-9_]*->fallthrough\(\)')
  unset var_name
  opts=" " flags=" "
  while read -r kind n; do
    opts+="$n "
    [ "$kind" = flag ] && flags+="$n "
  done < <(declared_options "${texts[@]}")
  file_opts[$f]=$opts
  file_flags[$f]=$flags
done
# Options shared through a helper: a command that calls add_place_options() has --target, --farm,
# --board and --tag (apps/cli/measuring_place.cpp).
for f in "${!parts[@]}"; do
  [ "$f" = apps/cli/measuring_place.cpp ] && continue
  read -ra texts <<<"${parts[$f]}"
  if cat "${texts[@]}" | grep -q 'add_place_options('; then
    file_opts[$f]+="${file_opts[apps/cli/measuring_place.cpp]# } "
  fi
done
global_opts=" --help -h${file_opts[apps/cli/commands.cpp]:- } "
global_flags=" --help -h${file_flags[apps/cli/commands.cpp]:- } "
if [ ${#sub_file[@]} -eq 0 ]; then
  problem "check-docs: no add_subcommand(\"...\") found in apps/cli/*.cpp"
fi

runner_sources=$(find harness/runner -name '*.cpp' -o -name '*.h' | sort)
runner_opts=" --help -h "
while read -r kind n; do runner_opts+="$n "; done < <(declared_options $runner_sources)
if [ "$runner_opts" = " --help -h " ]; then
  problem "check-docs: no k3bench options found under harness/runner/"
fi

if [ -n "${CHECK_DOCS_DEBUG:-}" ]; then  # what was parsed from the code
  for s in $(printf '%s\n' "${!sub_file[@]}" | sort); do
    echo "k3tune $s (${sub_file[$s]}):${sub_children[$s]:-} options:${file_opts[${sub_file[$s]}]} flags:${file_flags[${sub_file[$s]}]}"
  done
  echo "k3tune global options:$global_opts flags:$global_flags; also after: ${!sub_fallthrough[*]}"
  echo "k3bench options:$runner_opts"
fi

# "NAME CODE" per constant of the named enum in a header.
enum_codes() {  # file enum-name
  awk -v name="$2" '
    $0 ~ "enum +" name "[ :{]" { inside = 1 }
    inside {
      line = $0
      while (match(line, /k[A-Za-z0-9_]+ *= *[0-9]+/)) {
        item = substr(line, RSTART, RLENGTH)
        line = substr(line, RSTART + RLENGTH)
        split(item, kv, "=")
        gsub(/ /, "", kv[1]); gsub(/ /, "", kv[2])
        print kv[1], kv[2]
      }
      if ($0 ~ /}/) inside = 0
    }' "$1"
}

# ---- The docs -----------------------------------------------------------------------------------

docs=(README.md)
for d in docs/*.md; do [ -e "$d" ] && docs+=("$d"); done
while IFS= read -r d; do docs+=("$d"); done < <(find kernels -name README.md | sort)

# Records "LINE<TAB>KIND<TAB>TEXT" of one doc: KIND code (a code-block line, with backslash
# continuations joined), span (an inline code span) or link (a Markdown link target).
records() {
  awk '
    /^ *(```|~~~)/ { fence = !fence; inspan = 0; next }
    fence {
      if (pending != "") { text = pending " " $0 } else { text = $0; start = NR }
      if (text ~ /\\$/) { pending = substr(text, 1, length(text) - 1); next }
      pending = ""
      print start "\tcode\t" text
      next
    }
    /^[ \t]*$/ { inspan = 0; next }  # a paragraph ends, and with it any unclosed span
    {
      # A span may run over a line break inside a paragraph; it is reported at its first line.
      n = split($0, part, "`")
      prose = ""
      for (i = 1; i <= n; i++) {
        if (i > 1) {
          if (inspan) { print first "\tspan\t" buf; inspan = 0 }
          else { inspan = 1; buf = ""; first = NR }
        }
        if (inspan) buf = buf part[i]
        else prose = prose " " part[i]
      }
      if (inspan) buf = buf " "
      while (match(prose, /\]\([^)]+\)/)) {
        print NR "\tlink\t" substr(prose, RSTART + 2, RLENGTH - 3)
        prose = substr(prose, RSTART + RLENGTH)
      }
    }' "$1"
}

paths=0
commands=0
source_ext='\.(cpp|h|hpp|c|cc|S|sh|toml|md|json|js|cmake|txt|py|yaml|yml|html|supp)$'

# The doc's folder and every folder above it, up to the repository root: a doc may name paths
# relative to its own part of the tree (kernels/tcm/README.md: `drivers/...` is kernels/drivers/).
doc_dirs() {  # doc
  local d
  d=$(dirname "$1")
  dirs=()
  while [ "$d" != . ]; do
    dirs+=("$d")
    d=$(dirname "$d")
  done
  dirs+=(.)
}

found_in_dirs() {  # path
  local d
  for d in "${dirs[@]}"; do [ -e "$d/$1" ] && return 0; done
  return 1
}

path_exists() {  # path
  found_in_dirs "$1" || { [ "${1%%/*}" = k3k ] && [ -e "kernels/include/$1" ]; } ||
    [[ $user_made == *" $1 "* ]]
}

# GitHub's anchors of a Markdown file's headings, one per line: lower case, punctuation other
# than - and _ dropped, spaces to hyphens, repeats numbered -1, -2, ...
anchors() {  # file
  awk '
    /^ *(```|~~~)/ { fence = !fence; next }
    !fence && /^#+ / {
      h = tolower($0)
      sub(/^#+ +/, "", h)
      gsub(/[^a-z0-9 _-]/, "", h)
      gsub(/ /, "-", h)
      if (h in seen) { seen[h]++; print h "-" seen[h] } else { seen[h] = 0; print h }
    }' "$1"
}

check_link() {  # doc line target
  local t=${3%% *} dir file anchor=""
  [ -z "$t" ] && return
  case $t in *://* | mailto:* | /* | '<'*) return ;; esac
  case $t in *'#'*) anchor=${t#*#} ;; esac
  t=${t%%#*}
  dir=$(dirname "$1")
  file=$1
  if [ -n "$t" ]; then
    paths=$((paths + 1))
    if [ ! -e "$dir/$t" ]; then
      problem "$1:$2: link target '$3' does not exist (relative to $dir/)"
      return
    fi
    file=$dir/$t
  fi
  if [ -n "$anchor" ] && [[ $file == *.md ]]; then
    paths=$((paths + 1))
    anchors "$file" | grep -qxF -- "$anchor" ||
      problem "$1:$2: link '$3': no heading with the anchor #$anchor in $file"
  fi
}

check_path() {  # doc line token
  local t=$3 first
  t=${t#./}
  while [[ $t == *[.:] ]]; do t=${t%?}; done
  case $t in */*) ;; *) return ;; esac
  case $t in /* | '~'* | '$'* | -* | *'<'* | *'>'* | *'*'* | *'{'* | *'}'* | *...* | *://*) return ;; esac
  [[ $t =~ ^[A-Za-z0-9_.+-][A-Za-z0-9_./+@-]*$ ]] || return
  first=${t%%/*}
  case $first in build | results | nightly | . | ..) return ;; esac
  if ! { found_in_dirs "$first" || [ "$first" = k3k ] || [[ $t =~ $source_ext ]]; }; then
    return  # not a repository path (i/n, k/v_proj, GB/s, a run's own folders)
  fi
  paths=$((paths + 1))
  path_exists "$t" || problem "$1:$2: '$t' does not exist in the repository"
}

strip_token() {  # brackets and quotes around a command word, into $tok
  tok=$1
  tok=${tok#[\[(\"\']}
  tok=${tok%[\])\"\';,]}
  tok=${tok%]}
}

is_terminator() {
  case $1 in '#'* | '&&' | '||' | '|' | ';' | '>' | '>>' | '2>' | '2>&1' | '<') return 0 ;; esac
  return 1
}

# Checks the k3tune and k3bench commands in one piece of code (a code-block line or a span). The
# words of a command, up to a shell terminator or comment, belong to it and are not scanned again,
# so `--baseline-runner OLD/k3bench` is a value, not a second command.
check_commands() {  # doc line text
  local doc=$1 line=$2 words i j n w base prev sub alt opts flags children o
  read -ra words <<<"$3"
  n=${#words[@]}
  i=0
  while [ $i -lt $n ]; do
    [[ ${words[$i]} == '#'* ]] && break  # a shell comment: prose to the end of the line
    strip_token "${words[$i]}"; w=$tok
    prev=""
    [ $i -gt 0 ] && prev=${words[$((i - 1))]}
    base=${w##*/}
    if [[ $w == *=* || $prev == -* ]] || { [ "$base" != k3tune ] && [ "$base" != k3bench ]; }; then
      i=$((i + 1))
      continue
    fi
    [[ $w == */* && ! $w =~ ^[A-Za-z0-9_./-]+$ ]] && { i=$((i + 1)); continue; }
    j=$((i + 1))
    if [ "$base" = k3bench ]; then
      local checked=0
      while [ $j -lt $n ] && ! is_terminator "${words[$j]}"; do
        strip_token "${words[$j]}"; o=$tok
        o=${o%%=*}
        if [[ $o == -* && $o != - && $o != -- && ! $o =~ ^-[0-9] ]]; then
          checked=1
          [[ $runner_opts == *" $o "* ]] ||
            { [ "$o" = --build ] && [[ $w == */k3bench ]]; } ||
            problem "$doc:$line: 'k3bench $o': not an option of k3bench (harness/runner/)"
        fi
        j=$((j + 1))
      done
      [ $checked = 1 ] && commands=$((commands + 1))
      i=$j
      continue
    fi
    # k3tune: global options, then the subcommand, its nested word, its options.
    sub=""
    while [ $j -lt $n ] && ! is_terminator "${words[$j]}"; do
      strip_token "${words[$j]}"; o=$tok
      if [[ $o != -* ]]; then
        sub=$o
        break
      fi
      o=${o%%=*}
      if [ "$o" = --build ] && [[ $w == */k3tune ]]; then
        :  # scripts/k3tune --build: the wrapper's own option
      elif [[ $global_opts != *" $o "* ]]; then
        problem "$doc:$line: 'k3tune $o': not a global option of k3tune (apps/cli/commands.cpp)"
      elif [[ $global_flags != *" $o "* && ${words[$j]} != *=* ]]; then
        j=$((j + 1))  # its value
      fi
      j=$((j + 1))
    done
    if [ -z "$sub" ] || [ "$sub" = ... ] || [[ $sub =~ ^[A-Z_]+$ ]]; then
      [ $j -gt $((i + 1)) ] && commands=$((commands + 1))
      i=$((j + 1))
      continue
    fi
    commands=$((commands + 1))
    local file="" known=1
    IFS='|' read -ra alts <<<"$sub"
    for alt in "${alts[@]}"; do
      if [ -z "${sub_file[$alt]:-}" ]; then
        known=0
        problem "$doc:$line: 'k3tune $alt': not a k3tune subcommand (known: $(printf '%s\n' "${!sub_file[@]}" | sort | tr '\n' ' '| sed 's/ $//'))"
      else
        file=${sub_file[$alt]}
      fi
    done
    j=$((j + 1))
    if [ $known = 0 ]; then
      while [ $j -lt $n ] && ! is_terminator "${words[$j]}"; do j=$((j + 1)); done
      i=$j
      continue
    fi
    if [ -n "${sub_fallthrough[${alts[0]}]:-}" ]; then
      opts="$global_opts${file_opts[$file]}"
      flags="$global_flags${file_flags[$file]}"
    else
      opts=" --help -h${file_opts[$file]}"
      flags=" --help -h${file_flags[$file]}"
    fi
    children=${sub_children[${alts[0]}]:-}
    local nested_done=0
    while [ $j -lt $n ] && ! is_terminator "${words[$j]}"; do
      strip_token "${words[$j]}"; o=$tok
      if [[ $o == -* && $o != - && $o != -- && ! $o =~ ^-[0-9] ]]; then
        local name=${o%%=*}
        if [[ $opts == *" $name "* ]]; then
          :
        elif [[ $global_opts == *" $name "* ]]; then
          problem "$doc:$line: 'k3tune ${alts[0]} ... $name': $name is a global option: it goes before the subcommand"
        else
          problem "$doc:$line: 'k3tune ${alts[0]} $name': not an option of k3tune ${alts[0]} ($file)"
        fi
        if [[ $flags != *" $name "* && $o != *=* ]]; then j=$((j + 1)); fi  # its value
      elif [ -n "$children" ] && [ $nested_done = 0 ] && [ "$o" != ... ]; then
        nested_done=1
        IFS='|' read -ra nested <<<"$o"
        for alt in "${nested[@]}"; do
          [[ $children == *" $alt "* ]] ||
            problem "$doc:$line: 'k3tune ${alts[0]} $alt': not a subcommand of k3tune ${alts[0]} (known:${children% })"
        done
      fi
      j=$((j + 1))
    done
    i=$j
  done
}

check_exit_table() {  # doc header enum-name
  local doc=$1 header=$2 enum=$3 want got code name line names
  [ -e "$doc" ] || return 0
  want=$(enum_codes "$header" "$enum" | sort -k2n)
  if [ -z "$want" ]; then
    problem "$header: enum $enum not found"
    return
  fi
  # Rows of the first table after a heading that says "Exit codes": "LINE CODE NAMES...".
  got=$(awk '
    /^#+ .*[Ee]xit codes/ { section = 1; next }
    /^#/ { if (seen) exit; section = 0 }
    section && /^\|/ {
      seen = 1
      n = split($0, cell, "|")
      c = cell[2]; gsub(/[ `]/, "", c)
      if (c !~ /^[0-9]+$/) next
      names = ""
      rest = $0
      while (match(rest, /`k[A-Z][A-Za-z0-9_]*`/)) {
        names = names " " substr(rest, RSTART + 1, RLENGTH - 2)
        rest = substr(rest, RSTART + RLENGTH)
      }
      print NR, c names
      next
    }
    section && seen && !/^\|/ { exit }' "$doc")
  if [ -z "$got" ]; then
    problem "$doc: no exit-code table (a table under a heading naming \"Exit codes\")"
    return
  fi
  while read -r name code; do
    grep -qE "^[0-9]+ $code( |$)" <<<"$got" ||
      problem "$doc: exit-code table lacks $code ($name in $header)"
  done <<<"$want"
  while read -r line code names; do
    grep -qE " $code$" <<<"$want" ||
      problem "$doc:$line: exit code $code is not defined in $header (enum $enum)"
    for name in $names; do
      grep -qx "$name $code" <<<"$want" ||
        problem "$doc:$line: $name is not exit code $code in $header"
    done
  done <<<"$got"
}

for doc in "${docs[@]}"; do
  doc_dirs "$doc"
  while IFS=$'\t' read -r line kind text; do
    if [ "$kind" = link ]; then
      check_link "$doc" "$line" "$text"
      continue
    fi
    IFS=$' \t|=,;()"'\''[]' read -ra tokens <<<"$text"
    for t in "${tokens[@]}"; do check_path "$doc" "$line" "$t"; done
    check_commands "$doc" "$line" "$text"
  done < <(records "$doc")
done

tables=0
if [ -e docs/cli.md ]; then
  tables=$((tables + 1))
  check_exit_table docs/cli.md apps/cli/app_context.h Exit
else
  problem "docs/cli.md: missing (it holds the k3tune exit-code table)"
fi
if [ -e docs/k3bench.md ] && grep -qE '^#+ .*[Ee]xit codes' docs/k3bench.md; then
  tables=$((tables + 1))
  check_exit_table docs/k3bench.md harness/runner/errors.h ExitCode
fi

total=$((paths + commands + tables))
echo "check-docs: ${#docs[@]} docs, $paths paths, $commands commands, $tables exit-code tables checked"
if [ $failed -gt 0 ]; then
  echo "check-docs: $((total > failed ? total - failed : 0)) passed, $failed failed"
  exit 1
fi
echo "check-docs: $total passed, 0 failed"
