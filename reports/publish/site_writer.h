// The publish folder: written only where a page's content changed, and never over anything that is
// not an earlier publish.
//
// The folder's manifest, `.k3tune-publish.json`, is its marker and its memory: every file the site
// holds with the SHA-256 and size of its content. A page whose new content hashes the same, and
// whose file is still there at that size, is left alone (same bytes, same inode, same mtime); the
// others are written to a temporary name and renamed into place, so a reader never sees half a
// page; files of an earlier publish that the site no longer has are removed. Nothing else in the
// folder is touched.
//
// A folder that exists, is not empty and has no readable manifest holds something other than an
// earlier publish: PublishInputError before anything is written.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "reports/publish/site_pages.h"

namespace k3publish {

inline constexpr const char* kManifestName = ".k3tune-publish.json";

// Bad input: the folder is not one publish may write (the CLI exits 2).
struct PublishInputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// PublishInputError when `dir` is a file, or a folder with files but no manifest of an earlier
// publish (or one that cannot be read).
void check_publish_dir(const std::filesystem::path& dir);

struct WriteOutcome {
  std::size_t files = 0, written = 0, unchanged = 0, removed = 0;
  std::uintmax_t bytes = 0;  // of the whole site
  std::string largest_page;  // the largest .html
  std::uintmax_t largest_page_bytes = 0;
  std::vector<std::string> written_paths;  // relative, in the site's order
  // Files publish would have overwritten or removed but left as they are, one line each: changed
  // since publish wrote them (a page a person edited), not written by publish (a file the manifest
  // does not vouch for), or reached through a symbolic link that leads out of the folder.
  std::vector<std::string> left;
};

// Checks the folder (check_publish_dir), then writes. k3reports::ReportError when a file cannot
// be written.
WriteOutcome write_site(const std::filesystem::path& dir, const std::vector<SiteFile>& files,
                        const std::string& generator);

}  // namespace k3publish
