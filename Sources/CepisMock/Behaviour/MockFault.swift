import BrazilianDocuments
import Foundation

/// The routes served by ``MockServer`` whose answers can be scripted with faults.
public enum MockRoute: String, Sendable, CaseIterable, Codable {
  /// `GET /{cep}`: one address as JSON (cep.is protocol).
  case cep
  /// `GET /csv?ceps=a,b,c`: many addresses as CSV (cep.is protocol).
  case csv
  /// `GET /health`: the service status.
  case health
  /// `GET /cpf/{cpf}` and `GET /v1/cpf/{cpf}`: cpfhub.io protocol.
  case cpf
  /// `GET /ws/{cep}/json/`: one address as ViaCEP answers it (a fallback provider).
  case viaCEP = "viacep"
  /// `GET /api/cep/v2/{cep}`: one address as BrasilAPI's CEP v2 answers it (a fallback
  /// provider).
  case brasilAPI = "brasilapi"

  /// Whether the route is one of the public fallback providers (ViaCEP, BrasilAPI) rather
  /// than cep.is or cpfhub.io. ``MockChaos`` leaves these routes alone.
  public var isFallbackProvider: Bool { self == .viaCEP || self == .brasilAPI }
}

/// A misbehaviour the mock server injects into one answer.
///
/// Faults reach a route in three ways: queued with ``MockServer/script(_:_:)`` (one per request),
/// persistently with ``MockServer/setMode(_:_:)``, or randomly with ``MockChaos``. When several
/// apply to one request they are combined: modes first, then the chaos fault, then the scripted
/// fault; a later fault that replaces the body or status wins over an earlier one, while
/// delivery faults (delay, dribble, truncation, resets, giant headers) and CSV faults add up.
public enum MockFault: Sendable, Hashable {
  /// Answer with this HTTP status. `retryAfter` is the raw `Retry-After` header value (`"2"` or
  /// an HTTP-date); `body` replaces the default JSON error body.
  case status(Int, retryAfter: String? = nil, body: String? = nil)
  /// Wait this long before sending the (normal) answer.
  case delayHeaders(TimeInterval)
  /// Send the normal answer, but the body one byte at a time with `gap` between bytes.
  ///
  /// At most ``MockServer/Configuration/maxDribbleBytes`` bytes are dribbled; the rest of a
  /// longer body follows in one piece.
  case dribble(gap: TimeInterval)
  /// Announce the full `Content-Length`, send about half the body, then close the connection.
  case truncatedBody
  /// Close the connection with a TCP reset before sending anything.
  case resetBeforeHeaders
  /// Send the response head, then reset the connection.
  case resetAfterHeaders
  /// Answer 200 `text/html` with a captive-portal login page.
  case htmlPortal
  /// Answer 200 `application/json` with a JSON object of another shape.
  case wrongShapeJSON
  /// Answer 200 with the route's content type and a body of exactly `bytes` bytes of
  /// valid-looking padding, streamed without allocating it.
  case oversizedBody(bytes: Int)
  /// Answer 200 with `Transfer-Encoding: chunked` and never finish the body (until the client
  /// closes, the server stops, 60 seconds pass or 2 GiB were sent).
  case endlessChunked
  /// Add one response header whose value is `bytes` bytes long, then answer normally.
  case giantHeaders(bytes: Int)
  /// Answer 200 with the route's content type and a body that is not valid UTF-8.
  case invalidUTF8
  /// Answer 200 `{"success":false,"error":"…"}` (a cpfhub.io soft failure).
  case successFalse
  /// CSV only: start the body with a UTF-8 byte-order mark.
  case csvBOM
  /// CSV only: send the rows in another (deterministic) order; each row keeps its own CEP.
  case csvReordered
  /// CSV only: leave out the rows of CEPs that do not exist.
  case csvOmitMissing
  /// CSV only: send every row twice.
  case csvDuplicatedRows
  /// CSV only: write CEPs masked (`01001-000`).
  case csvMaskedCEPs
  /// CSV only: send the columns in another order (the header row names them).
  case csvColumnsShuffled
  /// CSV only: add rows for existing CEPs that were not asked for.
  case csvExtraRows
  /// CSV only: end lines with CRLF instead of LF.
  case csvCRLF
  /// Answer with a redirect: `status` (301, 302, 303, 307 or 308) and `Location: location`
  /// (absolute, or relative to the request), with an empty body.
  case redirect(status: Int = 302, location: String)
  /// ViaCEP only: write "not found" as the older `{"erro": true}` (a JSON boolean) instead of
  /// today's `{"erro": "true"}`.
  case viaCEPBooleanErro
  /// BrasilAPI only: answer 404 `service_error` as BrasilAPI does when its own upstream
  /// services fail, even for a CEP that exists: the errors read "A autenticacao de null
  /// falhou!" and "Erro ao se conectar com o serviço ViaCEP.", next to one "CEP não
  /// encontrado" (so only some, not all, say "not found").
  case brasilAPIOutage
  /// BrasilAPI only: answer 500 `{"message": "invalid json response body at …",
  /// "type": "invalid-json"}`, as its v2 endpoint does when its geocoder fails.
  case brasilAPIInvalidJSON
  /// No fault: answer normally (useful as a placeholder in a script).
  case normal

  /// A stable name for the fault, used as the key of ``MockServer/faultCounts``: the case name,
  /// with the code for statuses (`"status(503)"`).
  public var name: String {
    switch self {
    case .status(let code, _, _): return "status(\(code))"
    case .delayHeaders: return "delayHeaders"
    case .dribble: return "dribble"
    case .truncatedBody: return "truncatedBody"
    case .resetBeforeHeaders: return "resetBeforeHeaders"
    case .resetAfterHeaders: return "resetAfterHeaders"
    case .htmlPortal: return "htmlPortal"
    case .wrongShapeJSON: return "wrongShapeJSON"
    case .oversizedBody: return "oversizedBody"
    case .endlessChunked: return "endlessChunked"
    case .giantHeaders: return "giantHeaders"
    case .invalidUTF8: return "invalidUTF8"
    case .successFalse: return "successFalse"
    case .csvBOM: return "csvBOM"
    case .csvReordered: return "csvReordered"
    case .csvOmitMissing: return "csvOmitMissing"
    case .csvDuplicatedRows: return "csvDuplicatedRows"
    case .csvMaskedCEPs: return "csvMaskedCEPs"
    case .csvColumnsShuffled: return "csvColumnsShuffled"
    case .csvExtraRows: return "csvExtraRows"
    case .csvCRLF: return "csvCRLF"
    case .redirect(let status, _): return "redirect(\(status))"
    case .viaCEPBooleanErro: return "viaCEPBooleanErro"
    case .brasilAPIOutage: return "brasilAPIOutage"
    case .brasilAPIInvalidJSON: return "brasilAPIInvalidJSON"
    case .normal: return "normal"
    }
  }

  /// Whether the fault only changes CSV answers (it is ignored on the other routes).
  public var isCSVOnly: Bool {
    switch self {
    case .csvBOM, .csvReordered, .csvOmitMissing, .csvDuplicatedRows, .csvMaskedCEPs,
      .csvColumnsShuffled, .csvExtraRows, .csvCRLF:
      return true
    default:
      return false
    }
  }

  /// The one route the fault is meant for (CSV faults: ``MockRoute/csv``; provider faults:
  /// their provider's route), or `nil` when it applies to every route.
  public var onlyRoute: MockRoute? {
    switch self {
    case .viaCEPBooleanErro: return .viaCEP
    case .brasilAPIOutage, .brasilAPIInvalidJSON: return .brasilAPI
    default: return isCSVOnly ? .csv : nil
    }
  }

  /// Whether the fault changes anything on `route`.
  func applies(to route: MockRoute) -> Bool {
    if self == .normal { return false }
    guard let only = onlyRoute else { return true }
    return only == route
  }
}

/// The error thrown by ``MockServer/parseFaults(_:)`` for a malformed fault specification.
package struct MockFaultSpecError: Error, CustomStringConvertible, Sendable, Equatable {
  /// What was wrong.
  package var description: String
}

extension MockServer {
  /// Parses a fault specification string, as the control endpoint accepts it, into faults.
  ///
  /// `package`: the syntax is documented for the control endpoint (the CepisMock article); a
  /// Swift test scripts ``MockFault`` values directly.
  ///
  /// The specification is a comma-separated list; each item is one fault, optionally followed by
  /// `*N` to repeat it N times. Names are case-insensitive and `-`/`_` are ignored, so the case
  /// names (`truncatedBody`, `csvBOM`) work too. Values containing commas (an HTTP-date) go in
  /// double quotes.
  ///
  /// | Item | Fault |
  /// |---|---|
  /// | `503`, `429:retry-after=2`, `500:body=oops`, `status=502` | ``MockFault/status(_:retryAfter:body:)`` |
  /// | `delay=0.3` | ``MockFault/delayHeaders(_:)`` |
  /// | `dribble` (gap 0.05 s), `dribble=0.01` | ``MockFault/dribble(gap:)`` |
  /// | `truncated`, `truncated-body` | ``MockFault/truncatedBody`` |
  /// | `reset`, `reset-before` | ``MockFault/resetBeforeHeaders`` |
  /// | `reset-after` | ``MockFault/resetAfterHeaders`` |
  /// | `html`, `portal` | ``MockFault/htmlPortal`` |
  /// | `wrong-shape` | ``MockFault/wrongShapeJSON`` |
  /// | `oversized` (10 MiB), `oversized=BYTES` | ``MockFault/oversizedBody(bytes:)`` |
  /// | `endless`, `endless-chunked` | ``MockFault/endlessChunked`` |
  /// | `giant-headers` (64 KiB), `giant-headers=BYTES` | ``MockFault/giantHeaders(bytes:)`` |
  /// | `invalid-utf8` | ``MockFault/invalidUTF8`` |
  /// | `success-false` | ``MockFault/successFalse`` |
  /// | `csv-bom`, `csv-reordered`, `csv-omit-missing`, `csv-duplicated`, `csv-masked`, `csv-shuffled`, `csv-extra`, `csv-crlf` | the CSV faults |
  /// | `redirect=LOCATION` (302), `redirect301=LOCATION` … `redirect308=LOCATION` | ``MockFault/redirect(status:location:)`` |
  /// | `viacep-erro-bool` | ``MockFault/viaCEPBooleanErro`` |
  /// | `brasilapi-outage` | ``MockFault/brasilAPIOutage`` |
  /// | `brasilapi-invalid-json` | ``MockFault/brasilAPIInvalidJSON`` |
  /// | `normal`, `ok` | ``MockFault/normal`` |
  ///
  /// Example: `503*2,429:retry-after=1,truncated,csv-bom` gives five faults.
  ///
  /// Faults belong to the route they are queued on (``script(_:_:)``, or the control
  /// endpoint's `"route"`): `cep`, `csv`, `health`, `cpf`, and one per fallback provider,
  /// `viacep` and `brasilapi`, so a test can take cep.is down while ViaCEP answers. A fault
  /// meant for one route only (``MockFault/onlyRoute``) does nothing elsewhere.
  package static func parseFaults(_ spec: String) throws -> [MockFault] {
    var faults: [MockFault] = []
    for rawItem in splitOutsideQuotes(spec, separator: ",") {
      let item = rawItem.trimmingCharacters(in: .whitespaces)
      if item.isEmpty { continue }
      var body = item
      var repeatCount = 1
      if let star = item.lastIndex(of: "*"), !item[star...].contains("\"") {
        let countText = item[item.index(after: star)...]
        guard let count = Int(countText), count >= 0, count <= 100_000 else {
          throw MockFaultSpecError(description: "bad repeat count in '\(item)'")
        }
        repeatCount = count
        body = String(item[..<star])
      }
      let fault = try parseFault(body)
      faults.append(contentsOf: repeatElement(fault, count: repeatCount))
    }
    return faults
  }

  private static func parseFault(_ item: String) throws -> MockFault {
    // `name[=value][:option=value...]`
    let parts = splitOutsideQuotes(item, separator: ":")
    let head = parts[0]
    let (rawName, value) = splitKeyValue(head)
    let name = normalize(rawName)
    var options: [String: String] = [:]
    for part in parts.dropFirst() {
      let (key, optionValue) = splitKeyValue(part)
      options[normalize(key)] = optionValue ?? ""
    }
    func number(_ text: String?, default defaultValue: Double?) throws -> Double {
      guard let text else {
        if let defaultValue { return defaultValue }
        throw MockFaultSpecError(description: "'\(item)' needs a value")
      }
      guard let number = Double(text), number >= 0, number.isFinite else {
        throw MockFaultSpecError(description: "bad number '\(text)' in '\(item)'")
      }
      return number
    }
    func status(_ code: Int) throws -> MockFault {
      guard (100...599).contains(code) else {
        throw MockFaultSpecError(description: "bad status code in '\(item)'")
      }
      for key in options.keys where key != "retryafter" && key != "body" {
        throw MockFaultSpecError(description: "unknown option '\(key)' in '\(item)'")
      }
      return .status(code, retryAfter: options["retryafter"], body: options["body"])
    }
    if let code = Int(name) { return try status(code) }
    if !options.isEmpty && name != "status" {
      throw MockFaultSpecError(description: "'\(rawName)' takes no options")
    }
    switch name {
    case "status":
      guard let value, let code = Int(value) else {
        throw MockFaultSpecError(description: "'\(item)' needs a status code")
      }
      return try status(code)
    case "delay", "delayheaders": return .delayHeaders(try number(value, default: nil))
    case "dribble": return .dribble(gap: try number(value, default: 0.05))
    case "truncated", "truncatedbody", "truncate": return .truncatedBody
    case "reset", "resetbefore", "resetbeforeheaders": return .resetBeforeHeaders
    case "resetafter", "resetafterheaders": return .resetAfterHeaders
    case "html", "portal", "htmlportal": return .htmlPortal
    case "wrongshape", "wrongshapejson": return .wrongShapeJSON
    case "oversized", "oversizedbody":
      return .oversizedBody(bytes: Int(try number(value, default: 10_485_760)))
    case "endless", "endlesschunked": return .endlessChunked
    case "giantheaders", "giantheader":
      return .giantHeaders(bytes: Int(try number(value, default: 65_536)))
    case "invalidutf8": return .invalidUTF8
    case "successfalse": return .successFalse
    case "csvbom": return .csvBOM
    case "csvreordered": return .csvReordered
    case "csvomitmissing", "csvomit": return .csvOmitMissing
    case "csvduplicated", "csvduplicatedrows": return .csvDuplicatedRows
    case "csvmasked", "csvmaskedceps": return .csvMaskedCEPs
    case "csvshuffled", "csvcolumnsshuffled": return .csvColumnsShuffled
    case "csvextra", "csvextrarows": return .csvExtraRows
    case "csvcrlf": return .csvCRLF
    case "redirect", "redirect301", "redirect302", "redirect303", "redirect307", "redirect308":
      guard let location = value, !location.isEmpty else {
        throw MockFaultSpecError(description: "\(rawName) needs a location: \(rawName)=URL")
      }
      return .redirect(status: Int(name.dropFirst("redirect".count)) ?? 302, location: location)
    case "viaceperrobool", "viacepbooleanerro":
      return .viaCEPBooleanErro
    case "brasilapioutage": return .brasilAPIOutage
    case "brasilapiinvalidjson": return .brasilAPIInvalidJSON
    case "normal", "ok": return .normal
    default:
      throw MockFaultSpecError(description: "unknown fault '\(rawName)'")
    }
  }

  private static func normalize(_ name: String) -> String {
    String(name.lowercased().filter { $0 != "-" && $0 != "_" && $0 != " " })
  }

  private static func splitKeyValue(_ text: String) -> (String, String?) {
    guard let equals = text.firstIndex(of: "=") else {
      return (text.trimmingCharacters(in: .whitespaces), nil)
    }
    let key = text[..<equals].trimmingCharacters(in: .whitespaces)
    var value = text[text.index(after: equals)...].trimmingCharacters(in: .whitespaces)
    if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
      value = String(value.dropFirst().dropLast())
    }
    return (key, value)
  }

  private static func splitOutsideQuotes(_ text: String, separator: Character) -> [String] {
    var parts: [String] = []
    var current = ""
    var quoted = false
    for character in text {
      if character == "\"" { quoted.toggle() }
      if character == separator && !quoted {
        parts.append(current)
        current = ""
      } else {
        current.append(character)
      }
    }
    parts.append(current)
    return parts
  }

  /// Decodes one fault of the control endpoint's JSON: `{"status":503,"retryAfter":"1"}`,
  /// `{"kind":"truncatedBody"}`, `{"kind":"dribble","gap":0.05}`, or a spec string.
  static func fault(fromJSON object: Any) throws -> [MockFault] {
    if let text = object as? String { return try parseFaults(text) }
    if let code = object as? Int { return [.status(code)] }
    guard let dictionary = object as? [String: Any] else {
      throw MockFaultSpecError(description: "a fault must be an object or a string")
    }
    if let code = dictionary["status"] as? Int {
      guard (100...599).contains(code) else {
        throw MockFaultSpecError(description: "bad status code \(code)")
      }
      return [
        .status(
          code, retryAfter: stringValue(dictionary["retryAfter"] ?? dictionary["retry-after"]),
          body: dictionary["body"] as? String)
      ]
    }
    guard let kind = dictionary["kind"] as? String else {
      throw MockFaultSpecError(description: "a fault object needs \"status\" or \"kind\"")
    }
    let value = dictionary["seconds"] ?? dictionary["gap"] ?? dictionary["bytes"]
    if let value = value.flatMap(stringValue) {
      return try parseFaults("\(kind)=\(value)")
    }
    return try parseFaults(kind)
  }

  private static func stringValue(_ value: Any?) -> String? {
    switch value {
    case let text as String: return text
    case let number as Int: return String(number)
    case let number as Double: return String(number)
    default: return nil
    }
  }
}

/// Random fault injection, reproducible from a seed.
///
/// For each request on a ``MockRoute`` of cep.is or cpfhub.io (the fallback providers' routes
/// take scripted and mode faults only) the server takes the request's sequence number `index`
/// (0, 1, 2, … in arrival order, counting only those requests) and asks
/// ``fault(forRequestIndex:)``, which depends only on `seed` and `index`: with probability `rate`
/// it picks one fault of ``faults``. CSV-only faults drawn for another route do nothing and are
/// not counted.
public struct MockChaos: Sendable, Hashable {
  /// The seed of the random draws.
  public var seed: UInt64
  /// The probability, between 0 and 1, that a request gets a fault.
  public var rate: Double
  /// The faults drawn from (uniformly). Defaults to ``defaultFaults``.
  public var faults: [MockFault]

  /// The default chaos faults: resets, truncation, a short dribble, 429/500/502/503 statuses,
  /// a captive portal and the row-level CSV faults (none of which produce a wrong row).
  public static let defaultFaults: [MockFault] = [
    .resetBeforeHeaders, .resetAfterHeaders, .truncatedBody, .dribble(gap: 0.001),
    .status(429, retryAfter: "0"), .status(503), .status(500), .status(502), .htmlPortal,
    .csvReordered, .csvOmitMissing, .csvDuplicatedRows, .csvMaskedCEPs, .csvColumnsShuffled,
    .csvBOM, .csvExtraRows,
  ]

  /// Creates a chaos configuration.
  public init(seed: UInt64, rate: Double, faults: [MockFault] = MockChaos.defaultFaults) {
    self.seed = seed
    self.rate = rate
    self.faults = faults
  }

  /// The fault drawn for the request with this sequence number, or `nil` for none.
  public func fault(forRequestIndex index: Int) -> MockFault? {
    guard rate > 0, !faults.isEmpty else { return nil }
    var generator = SplitMix64(state: seed ^ UInt64(truncatingIfNeeded: index))
    let draw = Double(generator.next() >> 11) / Double(UInt64(1) << 53)
    guard draw < rate else { return nil }
    return faults[Int(generator.next() % UInt64(faults.count))]
  }
}
