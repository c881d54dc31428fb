/// One HTTP/1.x request as parsed by ``MockHTTPRequest/parse(_:limits:)``.
///
/// The parser is a pure function over bytes so that it can be unit-tested and fuzzed on its
/// own; ``MockServer`` feeds it the bytes read from a connection.
public struct MockHTTPRequest: Sendable, Hashable {
  /// The method, e.g. `GET`.
  public var method: String
  /// The request target exactly as received (origin form `/path?query`).
  public var target: String
  /// The path part of the target (percent-encoding kept), always starting with `/`
  /// (`*` for an asterisk-form target).
  public var path: String
  /// The query part of the target (after `?`), or `nil` when there is none.
  public var query: String?
  /// The protocol version, `HTTP/1.1` or `HTTP/1.0`.
  public var version: String
  /// The header fields, names lowercased; repeated fields are joined with `, `.
  public var headers: [String: String]
  /// The body (read according to `Content-Length`).
  public var body: [UInt8]
  /// Whether the connection stays open after the answer (HTTP/1.1 default, `Connection: close`
  /// turns it off; HTTP/1.0 needs `Connection: keep-alive`).
  public var keepAlive: Bool

  /// Creates a request.
  public init(
    method: String, target: String, path: String, query: String?, version: String,
    headers: [String: String], body: [UInt8], keepAlive: Bool
  ) {
    self.method = method
    self.target = target
    self.path = path
    self.query = query
    self.version = version
    self.headers = headers
    self.body = body
    self.keepAlive = keepAlive
  }

  /// Size limits applied by the parser.
  public struct Limits: Sendable, Hashable {
    /// The most bytes the request line plus headers may take (answered 431 beyond).
    public var maxHeaderBytes: Int
    /// The largest accepted `Content-Length` (answered 413 beyond).
    public var maxBodyBytes: Int

    /// Creates limits; the defaults are 16 KiB of head and 1 MiB of body.
    public init(maxHeaderBytes: Int = 16_384, maxBodyBytes: Int = 1_048_576) {
      self.maxHeaderBytes = maxHeaderBytes
      self.maxBodyBytes = maxBodyBytes
    }
  }

  /// The outcome of ``MockHTTPRequest/parse(_:limits:)``.
  public enum ParseResult: Sendable, Hashable {
    /// More bytes are needed.
    case incomplete
    /// A whole request (head and body) took the first `consumed` bytes.
    case complete(MockHTTPRequest, consumed: Int)
    /// The bytes are not an acceptable request: answer `status` and close the connection.
    case invalid(status: Int, reason: String)
  }

  /// Parses the request at the start of `bytes`.
  ///
  /// Never traps, whatever the input: malformed input gives `.invalid` with 400 (syntax), 431
  /// (head too large), 413 (body too large), 501 (a request `Transfer-Encoding`) or 505
  /// (another HTTP version).
  public static func parse(_ bytes: some Collection<UInt8>, limits: Limits = Limits())
    -> ParseResult
  {
    if let result = bytes.withContiguousStorageIfAvailable({ parse(buffer: $0, limits: limits) }) {
      return result
    }
    return Array(bytes).withUnsafeBufferPointer { parse(buffer: $0, limits: limits) }
  }

  private static let lineFeed: UInt8 = 10
  private static let carriageReturn: UInt8 = 13
  private static let space: UInt8 = 32
  private static let tab: UInt8 = 9

  // A token character (RFC 9110 tchar).
  private static func isTokenByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"):
      return true
    default:
      return "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }
  }

  static func parse(buffer: UnsafeBufferPointer<UInt8>, limits: Limits) -> ParseResult {
    let count = buffer.count
    // Ignore empty lines before the request line (RFC 9112 §2.2).
    var start = 0
    while start < count && (buffer[start] == carriageReturn || buffer[start] == lineFeed) {
      start += 1
      if start > 64 { return .invalid(status: 400, reason: "leading empty lines") }
    }
    // A first byte that cannot start a method is not HTTP (a TLS ClientHello starts with 0x16):
    // answer at once, as real servers do, instead of waiting for a head that never ends.
    if start < count && !isTokenByte(buffer[start]) {
      return .invalid(status: 400, reason: "not an HTTP request")
    }
    // Find the lines of the head.
    var lines: [Range<Int>] = []
    var lineStart = start
    var headEnd: Int?
    var index = start
    while index < count {
      if index - start >= limits.maxHeaderBytes {
        return .invalid(status: 431, reason: "request head too large")
      }
      if buffer[index] == lineFeed {
        var lineEnd = index
        if lineEnd > lineStart && buffer[lineEnd - 1] == carriageReturn { lineEnd -= 1 }
        if lineEnd == lineStart {
          headEnd = index + 1
          break
        }
        lines.append(lineStart..<lineEnd)
        lineStart = index + 1
      }
      index += 1
    }
    guard let headEnd else { return .incomplete }
    guard let requestLine = lines.first else {
      return .invalid(status: 400, reason: "empty request")
    }

    // Request line: METHOD SP TARGET SP VERSION.
    let lineBytes = buffer[requestLine]
    let pieces = lineBytes.split(separator: space, omittingEmptySubsequences: false)
    guard pieces.count == 3, !pieces[0].isEmpty, !pieces[1].isEmpty else {
      return .invalid(status: 400, reason: "malformed request line")
    }
    guard pieces[0].count <= 32, pieces[0].allSatisfy(isTokenByte) else {
      return .invalid(status: 400, reason: "malformed method")
    }
    guard pieces[1].allSatisfy({ $0 > 32 && $0 < 127 }) else {
      return .invalid(status: 400, reason: "malformed request target")
    }
    let version = String(decoding: pieces[2], as: UTF8.self)
    guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
      let other = Array(pieces[2])
      if other.count == 8, other.starts(with: "HTTP/".utf8), other[6] == UInt8(ascii: "."),
        (48...57).contains(other[5]), (48...57).contains(other[7])
      {
        return .invalid(status: 505, reason: "unsupported HTTP version")
      }
      return .invalid(status: 400, reason: "malformed HTTP version")
    }
    let method = String(decoding: pieces[0], as: UTF8.self)
    let target = String(decoding: pieces[1], as: UTF8.self)

    // Headers.
    var headers: [String: String] = [:]
    var contentLength: Int?
    for line in lines.dropFirst() {
      let first = buffer[line.lowerBound]
      if first == space || first == tab {
        return .invalid(status: 400, reason: "obsolete header line folding")
      }
      guard let colon = buffer[line].firstIndex(of: UInt8(ascii: ":")), colon > line.lowerBound
      else {
        return .invalid(status: 400, reason: "malformed header line")
      }
      let nameBytes = buffer[line.lowerBound..<colon]
      guard nameBytes.allSatisfy(isTokenByte) else {
        return .invalid(status: 400, reason: "malformed header name")
      }
      var valueStart = colon + 1
      var valueEnd = line.upperBound
      while valueStart < valueEnd && (buffer[valueStart] == space || buffer[valueStart] == tab) {
        valueStart += 1
      }
      while valueEnd > valueStart
        && (buffer[valueEnd - 1] == space || buffer[valueEnd - 1] == tab)
      {
        valueEnd -= 1
      }
      let valueBytes = buffer[valueStart..<valueEnd]
      guard valueBytes.allSatisfy({ ($0 >= 32 && $0 != 127) || $0 == tab }) else {
        return .invalid(status: 400, reason: "control character in header value")
      }
      let name = String(decoding: nameBytes, as: UTF8.self).lowercased()
      let value = String(decoding: valueBytes, as: UTF8.self)
      if name == "content-length" {
        for item in value.split(separator: ",", omittingEmptySubsequences: false) {
          let digits = item.trimmingSpaces
          guard !digits.isEmpty, digits.count <= 15,
            digits.utf8.allSatisfy({ (48...57).contains($0) }),
            let length = Int(digits)
          else {
            return .invalid(status: 400, reason: "malformed Content-Length")
          }
          if let contentLength, contentLength != length {
            return .invalid(status: 400, reason: "conflicting Content-Length")
          }
          contentLength = length
        }
      }
      if let existing = headers[name] {
        headers[name] = existing + ", " + value
      } else {
        headers[name] = value
      }
    }
    if headers["transfer-encoding"] != nil {
      return .invalid(status: 501, reason: "request Transfer-Encoding is not supported")
    }
    let bodyLength = contentLength ?? 0
    if bodyLength > limits.maxBodyBytes {
      return .invalid(status: 413, reason: "request body too large")
    }
    guard count - headEnd >= bodyLength else { return .incomplete }

    // Connection persistence.
    let connectionTokens = (headers["connection"] ?? "").lowercased()
      .split(separator: ",").map { $0.trimmingSpaces }
    let keepAlive: Bool
    if connectionTokens.contains("close") {
      keepAlive = false
    } else if version == "HTTP/1.0" {
      keepAlive = connectionTokens.contains("keep-alive")
    } else {
      keepAlive = true
    }

    // Target forms: origin (`/p?q`), absolute (`http://h/p?q`), asterisk (`*`).
    var pathAndQuery = Substring(target)
    if !target.hasPrefix("/") {
      if target == "*" {
        pathAndQuery = "*"
      } else if let schemeEnd = target.range(of: "://") {
        let afterAuthority = target[schemeEnd.upperBound...]
        if let slash = afterAuthority.firstIndex(where: { $0 == "/" || $0 == "?" }) {
          pathAndQuery = afterAuthority[slash...]
        } else {
          pathAndQuery = "/"
        }
        if pathAndQuery.hasPrefix("?") { pathAndQuery = "/" + pathAndQuery }
      } else {
        return .invalid(status: 400, reason: "malformed request target")
      }
    }
    var path = String(pathAndQuery)
    var query: String?
    if let questionMark = pathAndQuery.firstIndex(of: "?") {
      path = String(pathAndQuery[..<questionMark])
      query = String(pathAndQuery[pathAndQuery.index(after: questionMark)...])
    }
    let body = Array(buffer[headEnd..<(headEnd + bodyLength)])
    let request = MockHTTPRequest(
      method: method, target: target, path: path, query: query, version: version,
      headers: headers, body: body, keepAlive: keepAlive)
    return .complete(request, consumed: headEnd + bodyLength)
  }
}

extension StringProtocol {
  /// The text without leading and trailing spaces and tabs.
  var trimmingSpaces: String {
    var scalars = Substring(self)
    while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
    while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
    return String(scalars)
  }
}

/// Percent-decoding for path components and query values (`+` is kept as is).
func percentDecoded(_ text: Substring) -> String { percentDecoded(text.utf8) }

/// Percent-decoding of UTF-8 bytes (`+` is kept as is), without going through `Character`s:
/// a `/csv` query is 4.5 KB.
func percentDecoded(_ text: Substring.UTF8View) -> String {
  guard text.contains(UInt8(ascii: "%")) else { return String(decoding: text, as: UTF8.self) }
  var bytes: [UInt8] = []
  bytes.reserveCapacity(text.count)
  var iterator = Array(text)[...]
  while let byte = iterator.popFirst() {
    if byte == UInt8(ascii: "%"), iterator.count >= 2,
      let high = hexValue(iterator[iterator.startIndex]),
      let low = hexValue(iterator[iterator.startIndex + 1])
    {
      bytes.append(high << 4 | low)
      iterator = iterator.dropFirst(2)
    } else {
      bytes.append(byte)
    }
  }
  return String(decoding: bytes, as: UTF8.self)
}

private func hexValue(_ byte: UInt8) -> UInt8? {
  switch byte {
  case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
  case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
  case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
  default: return nil
  }
}

/// Splits a query string into decoded name/value pairs (a later repeat of a name wins).
func queryDictionary(_ query: String?) -> [String: String] {
  guard let query, !query.isEmpty else { return [:] }
  var items: [String: String] = [:]
  for pair in query.utf8.split(separator: UInt8(ascii: "&")) {
    if let equals = pair.firstIndex(of: UInt8(ascii: "=")) {
      items[percentDecoded(pair[..<equals])] = percentDecoded(pair[pair.index(after: equals)...])
    } else {
      items[percentDecoded(pair)] = ""
    }
  }
  return items
}

/// What a `/csv` list of CEPs holds.
enum CEPList: Equatable {
  /// Every item is a CEP: their values, in order.
  case values([Int])
  /// The first item that is not a CEP (spaces and tabs around it removed).
  case invalid(String)
  /// More items than the limit, all CEPs up to the one past it.
  case tooMany
}

/// Parses a comma-separated list of CEPs on its bytes, in one pass: this runs for 500 CEPs
/// a request, and the benchmarks' client shares its cores with this server. Spaces and tabs
/// around an item are ignored; an empty item is not a CEP.
func parseCEPList(_ bytes: UnsafeBufferPointer<UInt8>, limit: Int) -> CEPList {
  let comma = UInt8(ascii: ",")
  let space = UInt8(ascii: " ")
  let tab = UInt8(ascii: "\t")
  var values: [Int] = []
  values.reserveCapacity(min(bytes.count / 9 + 1, limit + 1))
  var start = 0
  while true {
    var end = start
    while end < bytes.count && bytes[end] != comma { end += 1 }
    var low = start
    var high = end
    while low < high && (bytes[low] == space || bytes[low] == tab) { low += 1 }
    while high > low && (bytes[high - 1] == space || bytes[high - 1] == tab) { high -= 1 }
    let item = UnsafeBufferPointer(rebasing: bytes[low..<high])
    guard let value = cepValue(utf8: item) else {
      return .invalid(String(decoding: item, as: UTF8.self))
    }
    values.append(value)
    if values.count > limit { return .tooMany }
    if end == bytes.count { return .values(values) }
    start = end + 1
  }
}
