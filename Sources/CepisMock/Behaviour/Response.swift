import CepisSupport
import Foundation

let jsonType = "application/json; charset=utf-8"
let csvType = "text/csv; charset=utf-8"
let htmlType = "text/html; charset=utf-8"

/// A body to send: bytes, or generated padding (streamed), or an endless chunked stream.
enum ResponseBody {
  case bytes([UInt8])
  /// `prefix`, then `fill` repeated (cut to length), then `suffix`: exactly `total` bytes.
  case padded(prefix: [UInt8], fill: [UInt8], suffix: [UInt8], total: Int)
  case endlessChunked(prefix: [UInt8], fill: [UInt8])

  var length: Int {
    switch self {
    case .bytes(let bytes): return bytes.count
    case .padded(_, _, _, let total): return total
    case .endlessChunked: return 0
    }
  }

  /// Appends the bytes in `range` (for `.bytes` and `.padded`).
  func append(_ range: Range<Int>, to out: inout [UInt8]) {
    switch self {
    case .bytes(let bytes):
      out.append(contentsOf: bytes[range])
    case .padded(let prefix, let fill, let suffix, let total):
      let suffixStart = max(total - suffix.count, 0)
      let prefixEnd = min(prefix.count, suffixStart)
      for offset in range {
        if offset < prefixEnd {
          out.append(prefix[offset])
        } else if offset >= suffixStart {
          out.append(suffix[offset - (total - suffix.count)])
        } else {
          out.append(fill[(offset - prefixEnd) % fill.count])
        }
      }
    case .endlessChunked:
      break
    }
  }
}

/// An answer and how to deliver it.
struct Response {
  var status: Int
  var contentType: String
  var body: ResponseBody
  var headers: [(String, String)] = []
  var close = false
  var headOnly = false
  var delay: TimeInterval = 0
  var dribbleGap: TimeInterval?
  var truncate = false
  var resetBeforeHeaders = false
  var resetAfterHeaders = false

  init(status: Int, contentType: String, body: ResponseBody) {
    self.status = status
    self.contentType = contentType
    self.body = body
  }

  /// The status line and header fields, with `Content-Length: contentLength`, or chunked
  /// transfer encoding when it is `nil`.
  func head(contentLength: Int?) -> [UInt8] {
    var text = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
    text += "Content-Type: \(contentType)\r\n"
    if let contentLength {
      text += "Content-Length: \(contentLength)\r\n"
    } else {
      text += "Transfer-Encoding: chunked\r\n"
    }
    text += close ? "Connection: close\r\n" : "Connection: keep-alive\r\n"
    text += "Server: CepisMock\r\n"
    for (name, value) in headers { text += "\(name): \(value)\r\n" }
    text += "\r\n"
    return Array(text.utf8)
  }
}

/// `value` as compact JSON bytes (the package's one writer, `CepisSupport.JSONValue`).
func jsonObject(_ value: JSONValue) -> [UInt8] { value.bytes }

let reasonPhrases: [Int: String] = [
  200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
  405: "Method Not Allowed", 408: "Request Timeout", 413: "Content Too Large",
  429: "Too Many Requests", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
  501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
  504: "Gateway Timeout", 505: "HTTP Version Not Supported",
]

func reasonPhrase(_ status: Int) -> String { reasonPhrases[status] ?? "Status \(status)" }
