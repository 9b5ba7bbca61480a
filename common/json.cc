#include "common/json.h"

#include <cmath>

namespace reelfs {

std::string DumpJson(const Json& doc) {
  return doc.dump(/*indent=*/-1, /*indent_char=*/' ', /*ensure_ascii=*/false,
                  Json::error_handler_t::replace);
}

Json JsonNumber(double v) { return std::isfinite(v) ? Json(v) : Json(0); }

}  // namespace reelfs
