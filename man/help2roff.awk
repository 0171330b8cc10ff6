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

BEGIN { state = "usage"; blank = 1; bad = 0 }

state == "usage" && /^usage: pccx / { sub(/^usage: /, ""); print ".PP" }
state == "usage" && /^ +pccx / { sub(/^ +/, ""); print ".br" }
state == "usage" && /^pccx / {
	cmd = $1 " " $2
	print "\\fB" cmd "\\fR" esc(substr($0, length(cmd) + 1))
	next
}
state == "usage" && /^$/ { state = "about"; blank = 1; started = 0; next }

# a table's title after a blank line: "options:", "sampler (docs/sampling.md):"
state != "usage" && blank && /^[a-z][a-z -]*( \([^)]*\))?:$/ {
	flush()
	title = substr($0, 1, length($0) - 1)
	positional = (title == "arguments")
	state = "table"
	print ".PP\n.I \"" toupper(substr(title, 1, 1)) substr(title, 2) "\""
	blank = 0
	next
}
/^$/ { blank = 1; if (state == "table") flush(); next }

state == "about" {
	if (!started || blank)
		print ".PP"
	started = 1
	blank = 0
	print "\\&" esc($0)
	next
}

state == "table" && /^  [^ ]/ {
	flush()
	line = substr($0, 3)
	if (match(line, /  +/)) {
		entry = left(substr(line, 1, RSTART - 1), positional)
		body = "\\&" esc(substr(line, RSTART + RLENGTH))
	} else {
		entry = left(line, positional)
	}
	blank = 0
	next
}
state == "table" && /^   / {
	sub(/^ +/, "")
	body = body (body == "" ? "" : "\n") "\\&" esc($0)
	blank = 0
	next
}

{ print "man/help2roff.awk: cannot place this help line: " $0 >"/dev/stderr"; bad = 1 }

END { flush(); exit bad }
