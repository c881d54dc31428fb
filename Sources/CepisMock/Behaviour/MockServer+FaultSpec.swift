import Foundation

/// The error thrown by ``MockServer/parseFaults(_:)`` for a malformed fault specification.
struct MockFaultSpecError: Error, CustomStringConvertible, Sendable, Equatable {
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
  static func parseFaults(_ spec: String) throws -> [MockFault] {
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
