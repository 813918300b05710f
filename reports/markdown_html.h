// GitHub-flavoured Markdown (tables included) rendered as HTML by cmark-gfm, the reference
// implementation GitHub itself uses: the night's text becomes real headings, tables and code
// blocks in report.html instead of raw pipes and dashes. Raw HTML in the text is not passed
// through (cmark's safe default), so log lines cannot inject markup.
#pragma once

#include <string>

namespace k3reports {

// `heading_shift` moves every heading down that many levels (1: "# X" becomes <h2>), for text
// placed inside a page that has its own <h1>.
std::string markdown_to_html(const std::string& markdown, int heading_shift = 0);

}  // namespace k3reports
