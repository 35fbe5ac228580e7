// Strings that come from files (case and object names, attributes) on their way to a terminal, a
// log or a report, and identifiers from files on their way into a path (docs/reliability.md,
// "Strings and identifiers from files").
#pragma once
#include <string>
#include <string_view>

namespace tqref {

// A display form that cannot drive a terminal: printable ASCII and well-formed UTF-8 of printable
// characters are kept; every other byte (C0 controls, DEL, the UTF-8 encodings of C1 controls
// U+0080..U+009F, malformed or overlong UTF-8) is shown as \xNN, so an escape sequence reads as
// "\x1b[2J". With `keep_newlines`, '\n' and '\t' stay (multi-line free text such as a stored YAML
// sweep).
std::string printable(std::string_view s, bool keep_newlines = false);

// "" when `s` is a name tqref uses in paths and identifiers: 1..200 characters from
// [A-Za-z0-9_.+-], not starting with '.' (no path separator, no "..", nothing hidden); else why
// not, with the value shown through printable().
std::string name_problem(std::string_view s);

// `s` made into such a name, for free text that becomes part of one (a trace's model_name, e.g.
// "meta-llama/Llama-3-8B", in golden case names): every other character becomes '_', a leading
// '.' too, cut to 64 characters; "unnamed" when empty.
std::string name_token(std::string_view s);

}  // namespace tqref
