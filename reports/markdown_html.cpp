#include "reports/markdown_html.h"

#include <algorithm>
#include <cstdlib>
#include <memory>

#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm.h>

namespace k3reports {

std::string markdown_to_html(const std::string& markdown, int heading_shift) {
  cmark_gfm_core_extensions_ensure_registered();
  std::unique_ptr<cmark_parser, decltype(&cmark_parser_free)> parser(
      cmark_parser_new(CMARK_OPT_DEFAULT), &cmark_parser_free);
  for (const char* name : {"table", "strikethrough", "autolink"})
    if (cmark_syntax_extension* ext = cmark_find_syntax_extension(name))
      cmark_parser_attach_syntax_extension(parser.get(), ext);
  cmark_parser_feed(parser.get(), markdown.data(), markdown.size());
  std::unique_ptr<cmark_node, decltype(&cmark_node_free)> document(
      cmark_parser_finish(parser.get()), &cmark_node_free);
  if (heading_shift != 0) {
    std::unique_ptr<cmark_iter, decltype(&cmark_iter_free)> it(cmark_iter_new(document.get()),
                                                               &cmark_iter_free);
    for (cmark_event_type ev; (ev = cmark_iter_next(it.get())) != CMARK_EVENT_DONE;) {
      cmark_node* node = cmark_iter_get_node(it.get());
      if (ev == CMARK_EVENT_ENTER && cmark_node_get_type(node) == CMARK_NODE_HEADING)
        cmark_node_set_heading_level(
            node, std::clamp(cmark_node_get_heading_level(node) + heading_shift, 1, 6));
    }
  }
  char* html = cmark_render_html(document.get(), CMARK_OPT_DEFAULT,
                                 cmark_parser_get_syntax_extensions(parser.get()));
  std::string out = html ? html : "";
  std::free(html);
  return out;
}

}  // namespace k3reports
