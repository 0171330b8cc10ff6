# `pccx CMD --help` (the format of host/cli/options.c) as man(7) roff, for man/expand.sh:
# the usage lines, the paragraph, then each table ("arguments:", "options:", a group such as
# "sampler (...):") as .TP entries: option names bold, values and arguments italic.

# Text for roff: backslashes escaped, the dashes of a word that starts with one (an option)
# option dashes (\-, a minus, never a hyphen), every line protected from being read as a
# request (\&).
function esc(s,   out, i, c, opt) {
	gsub(/\\/, "\\e", s)
	out = ""
	opt = 0
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (c == "-" && (i == 1 || index(" ([|\047\"=,", substr(s, i - 1, 1))))
			opt = 1
		else if (index(" )]|\047\",", c))
			opt = 0
		out = out (c == "-" && opt ? "\\-" : c)
	}
	return out
}

# "-o, --out FILE": names bold, the value italic; a positional ("TEXT | ID...") italic
function left(s, positional,   n, i, alt, k, out) {
	out = ""
	if (positional) {
		n = split(s, alt, / \| /)
		for (i = 1; i <= n; i++)
			out = out (i > 1 ? " | " : "") "\\fI" esc(alt[i]) "\\fR"
		return out
	}
	n = split(s, alt, /, /)
	for (i = 1; i <= n; i++) {
		k = index(alt[i], " ")
		out = out (i > 1 ? ", " : "") "\\fB" esc(k ? substr(alt[i], 1, k - 1) : alt[i]) "\\fR"
		if (k)
			out = out " \\fI" esc(substr(alt[i], k + 1)) "\\fR"
	}
	return out
}

function flush() {
	if (entry != "")
		print ".TP\n" entry (body != "" ? "\n" body : "")
	entry = ""
	body = ""
}

# The help is read whole first: a table's title is known by the entry that follows it.
{ line[NR] = $0 }

END {
	state = "usage"
	blank = 1
	bad = 0
	for (i = 1; i <= NR; i++) {
		l = line[i]
		if (state == "usage") {
			if (l ~ /^usage: pccx /) {
				sub(/^usage: /, "", l)
				print ".PP"
			} else if (l ~ /^ +pccx /) {
				sub(/^ +/, "", l)
				print ".br"
			} else if (l == "") {
				state = "about"
				blank = 1
				started = 0
				continue
			}
			if (l ~ /^pccx /) {
				split(l, w, " ")
				cmd = w[1] " " w[2]
				print "\\fB" cmd "\\fR" esc(substr(l, length(cmd) + 1))
				continue
			}
		} else if (blank && l ~ /^[^ ].*:$/ && line[i + 1] ~ /^  [^ ]/) {
			# a table's title ("options:", "sampler (docs/sampling.md): ...:") after a
			# blank line, before its first entry
			flush()
			title = substr(l, 1, length(l) - 1)
			positional = (title == "arguments")
			state = "table"
			print ".PP\n.I \"" toupper(substr(title, 1, 1)) substr(title, 2) "\""
			blank = 0
			continue
		} else if (l == "") {
			blank = 1
			if (state == "table")
				flush()
			continue
		} else if (state == "about") {
			if (!started || blank)
				print ".PP"
			started = 1
			blank = 0
			print "\\&" esc(l)
			continue
		} else if (state == "table" && l ~ /^  [^ ]/) {
			flush()
			l = substr(l, 3)
			if (match(l, /  +/)) {
				entry = left(substr(l, 1, RSTART - 1), positional)
				body = "\\&" esc(substr(l, RSTART + RLENGTH))
			} else {
				entry = left(l, positional)
			}
			blank = 0
			continue
		} else if (state == "table" && l ~ /^   /) {
			sub(/^ +/, "", l)
			body = body (body == "" ? "" : "\n") "\\&" esc(l)
			blank = 0
			continue
		}
		print "man/help2roff.awk: cannot place this help line: " l >"/dev/stderr"
		bad = 1
	}
	flush()
	exit bad
}
