import Foundation

extension Address {
  /// The address in a cep.is answer, read by a byte scanner that knows the answer's usual
  /// shape; `nil` whenever the body steps outside it, and the caller then decodes with
  /// `JSONDecoder`, whose verdict stands.
  ///
  /// Foundation's `JSONDecoder` costs, on Linux, about as much per answer as the rest of a
  /// single lookup on the AsyncHTTPClient transport (profiled in `2fdc18b`;
  /// Benchmarks/RESULTS.md, row `single c=1 (AHC)`). This path accepts only what it can read
  /// exactly as ``init(from:)`` would: one object whose values are strings (escapes read, but
  /// not surrogate pairs), JSON numbers, `null`, `true`/`false`, or — for `geo` only — one flat object of numbers and
  /// strings; known keys at most once; nothing but whitespace after it. Anything else (a surrogate
  /// escape, an array, a number where a string is expected, a duplicate key, a control character, invalid
  /// UTF-8) gives `nil`, never a different answer. The differential tests hold it to
  /// `JSONDecoder` on every sample answer and on mutated ones.
  static func fastCepisAnswer(_ body: Data) -> Address? {
    body.withUnsafeBytes { raw -> Address? in
      var scanner = FastJSONScanner(bytes: raw.bindMemory(to: UInt8.self))
      return scanner.address()
    }
  }
}

/// A single-pass reader of the shape ``Address/fastCepisAnswer(_:)`` accepts.
private struct FastJSONScanner {
  let bytes: UnsafeBufferPointer<UInt8>
  var index = 0

  /// A value as the scanner saw it.
  enum Value {
    case string(String)
    case number(Double)
    case null
    case other
  }

  init(bytes: UnsafeBufferPointer<UInt8>) {
    self.bytes = bytes
  }

  mutating func skipSpace() {
    while index < bytes.count {
      switch bytes[index] {
      case 0x20, 0x09, 0x0A, 0x0D: index += 1
      default: return
      }
    }
  }

  mutating func consume(_ byte: UInt8) -> Bool {
    skipSpace()
    guard index < bytes.count, bytes[index] == byte else { return false }
    index += 1
    return true
  }

  /// A string in valid UTF-8 without control characters; escapes are read, except `\\u` for
  /// a surrogate (left to JSONDecoder).
  mutating func string() -> String? {
    guard consume(UInt8(ascii: "\"")) else { return nil }
    var start = index
    var ascii = true
    var unescaped: [UInt8]?
    while index < bytes.count {
      let byte = bytes[index]
      if byte == UInt8(ascii: "\"") {
        let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
        index += 1
        if var built = unescaped {
          built.append(contentsOf: slice)
          return Self.text(built, ascii: ascii)
        }
        return Self.text(slice, ascii: ascii)
      }
      if byte < 0x20 { return nil }
      if byte >= 0x80 { ascii = false }
      if byte == UInt8(ascii: "\\") {
        var built = unescaped ?? []
        built.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
        index += 1
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "\""): built.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): built.append(UInt8(ascii: "\\"))
        case UInt8(ascii: "/"): built.append(UInt8(ascii: "/"))
        case UInt8(ascii: "b"): built.append(0x08)
        case UInt8(ascii: "f"): built.append(0x0C)
        case UInt8(ascii: "n"): built.append(0x0A)
        case UInt8(ascii: "r"): built.append(0x0D)
        case UInt8(ascii: "t"): built.append(0x09)
        case UInt8(ascii: "u"):
          guard index + 4 < bytes.count else { return nil }
          var code: UInt32 = 0
          for offset in 1...4 {
            let digit = bytes[index + offset]
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): code = code << 4 | UInt32(digit - 0x30)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): code = code << 4 | UInt32(digit - 0x57)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): code = code << 4 | UInt32(digit - 0x37)
            default: return nil
            }
          }
          // A surrogate half is not a scalar: pairs are left to JSONDecoder.
          guard let scalar = Unicode.Scalar(code) else { return nil }
          built.append(contentsOf: String(Character(scalar)).utf8)
          if code >= 0x80 { ascii = false }
          index += 4
        default:
          return nil
        }
        index += 1
        start = index
        unescaped = built
        continue
      }
      index += 1
    }
    return nil
  }

  /// `bytes` as a string; `nil` for invalid UTF-8, which `String(decoding:)` would repair with
  /// U+FFFD where JSONDecoder refuses the body.
  static func text<Bytes: Collection<UInt8>>(_ bytes: Bytes, ascii: Bool) -> String? {
    let text = String(decoding: bytes, as: UTF8.self)
    if ascii { return text }
    guard text.utf8.count == bytes.count, !text.unicodeScalars.contains("\u{FFFD}") else {
      return nil
    }
    return text
  }

  /// A JSON number (RFC 8259 grammar, checked) as a `Double`.
  mutating func number() -> Double? {
    skipSpace()
    let start = index
    func digits() -> Int {
      let first = index
      while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
      return index - first
    }
    if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
    guard index < bytes.count else { return nil }
    if bytes[index] == UInt8(ascii: "0") {
      index += 1
    } else if digits() == 0 {
      return nil
    }
    if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
      index += 1
      guard digits() > 0 else { return nil }
    }
    if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
      index += 1
      if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")
      {
        index += 1
      }
      guard digits() > 0 else { return nil }
    }
    let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    guard let value = Double(text), value.isFinite else { return nil }
    return value
  }

  mutating func literal(_ word: StaticString) -> Bool {
    let count = word.utf8CodeUnitCount
    guard index + count <= bytes.count else { return false }
    for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
    index += count
    return true
  }

  /// A scalar value; `.other` for `true`/`false`; `nil` for anything this scanner does not read.
  mutating func scalar() -> Value? {
    skipSpace()
    guard index < bytes.count else { return nil }
    switch bytes[index] {
    case UInt8(ascii: "\""): return string().map(Value.string)
    case UInt8(ascii: "n"): return literal("null") ? .null : nil
    case UInt8(ascii: "t"): return literal("true") ? .other : nil
    case UInt8(ascii: "f"): return literal("false") ? .other : nil
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number().map(Value.number)
    default: return nil
    }
  }

  /// Reads `{ "key": value, … }`, handing each key (its index in `keys`, or `nil` for another
  /// key) to `field`, which reads the value and says whether it could. A key seen twice makes
  /// the object unreadable here.
  mutating func object(
    keys: [StaticString], _ field: (inout FastJSONScanner, Int?) -> Bool
  ) -> Bool {
    guard consume(UInt8(ascii: "{")) else { return false }
    if consume(UInt8(ascii: "}")) { return true }
    var seen: UInt64 = 0
    var others: Set<String> = []
    repeat {
      guard let key = keyIndex(keys, others: &others) else { return false }
      if let known = key {
        guard seen & (1 << known) == 0 else { return false }
        seen |= 1 << known
      }
      guard consume(UInt8(ascii: ":")), field(&self, key) else { return false }
    } while consume(UInt8(ascii: ","))
    return consume(UInt8(ascii: "}"))
  }

  /// The next key as its index in `keys` (`.some(nil)` for another key, remembered in
  /// `others`); `nil` when it cannot be read or repeats another key.
  mutating func keyIndex(_ keys: [StaticString], others: inout Set<String>) -> Int?? {
    skipSpace()
    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
    let start = index + 1
    var end = start
    while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\"),
      bytes[end] >= 0x20
    {
      end += 1
    }
    if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
      let length = end - start
      for (position, key) in keys.enumerated() where key.utf8CodeUnitCount == length {
        var same = true
        for offset in 0..<length where bytes[start + offset] != key.utf8Start[offset] {
          same = false
          break
        }
        if same {
          index = end + 1
          return .some(position)
        }
      }
    }
    // Another key (perhaps with escapes): read it fully, and refuse a repeat.
    // A known key spelled with escapes is left to JSONDecoder.
    guard let text = string(), !keys.contains(where: { $0.description == text }),
      others.insert(text).inserted
    else { return nil }
    return .some(nil)
  }

  static let addressKeys: [StaticString] = [
    "cep", "logradouro", "complemento", "bairro", "localidade", "uf", "ibge", "geo",
  ]

  mutating func address() -> Address? {
    var fields = [String](repeating: "", count: 7)
    var geo: Geo?
    var hasCEP = false
    let ok = object(keys: Self.addressKeys) { scanner, key in
      switch key {
      case .some(let position) where position < 7:
        switch scanner.scalar() {
        case .string(let text): fields[position] = text
        case .null: fields[position] = ""
        default: return false  // numbers and booleans are JSONDecoder's to render
        }
        if position == 0 { hasCEP = true }
        return true
      case .some:
        scanner.skipSpace()
        if scanner.index < scanner.bytes.count, scanner.bytes[scanner.index] == UInt8(ascii: "n") {
          return scanner.literal("null")
        }
        guard let value = scanner.geo() else { return false }
        geo = value
        return true
      case nil:
        // Another key, or `source`, which never changes a cep.is answer: any scalar.
        return scanner.scalar() != nil
      }
    }
    skipSpace()
    guard ok, index == bytes.count, hasCEP, let cep = normalizedCEPDigits(fields[0].utf8) else {
      return nil
    }
    return Address(
      cep: cep, logradouro: fields[1], complemento: fields[2], bairro: fields[3],
      localidade: fields[4], uf: fields[5], ibge: fields[6], geo: geo, source: .cepis)
  }

  static let geoKeys: [StaticString] = ["lat", "lon", "raio_m", "precisao"]

  /// `{"lat": n, "lon": n, "raio_m": n, "precisao": "…"}` with numbers as numbers.
  mutating func geo() -> Geo? {
    var numbers: [Double?] = [nil, nil, nil]
    var precisao = ""
    let ok = object(keys: Self.geoKeys) { scanner, key in
      switch key {
      case .some(let position) where position < 3:
        switch scanner.scalar() {
        case .number(let value):
          numbers[position] = value
          return true
        case .null:
          return position == 2
        default:
          return false
        }
      case .some:
        switch scanner.scalar() {
        case .string(let text): precisao = text
        case .null: precisao = ""
        default: return false
        }
        return true
      case nil:
        return scanner.scalar() != nil
      }
    }
    guard ok, let lat = numbers[0], let lon = numbers[1] else { return nil }
    let meters = numbers[2] ?? 0
    let raioM = meters.isFinite && abs(meters) < 1e9 ? Int(meters.rounded()) : 0
    return Geo(lat: lat, lon: lon, raioM: raioM, precisao: precisao)
  }
}
