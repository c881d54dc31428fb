import Foundation

/// How one ``CacheEntry`` is written as a Valkey string value, and read back.
///
/// A value is UTF-8 text, its fields separated by U+001F (the unit separator, which no DNE
/// field holds), and opens with a format tag:
///
/// ```
/// cepis1 ␟ kind ␟ storedAt ␟ found ␟ logradouro ␟ complemento ␟ bairro ␟ localidade ␟ uf ␟ ibge ␟ lat ␟ lon ␟ raio ␟ precisao
/// ```
///
/// `kind` is ``CacheEntryKind``'s raw value, `storedAt` milliseconds since 1970, `found` 1 for
/// an address and 0 for "does not exist" (the fields after it then empty); the four `geo`
/// fields are empty without coordinates. The CEP and the edition are the key's
/// (``ValkeyKeys``), never repeated in the value. A value of another format — a future Cepis's
/// tag, or a key some other program wrote under the prefix — decodes to `nil`: a miss.
enum ValkeyEntryFormat {
  /// The tag this code writes and reads; a new layout takes a new tag.
  static let tag = "cepis1"
  /// The field separator.
  static let separator: Character = "\u{1F}"
  /// The fields of a value, the tag included.
  static let fieldCount = 14

  /// `entry` as a value; `nil` when one of its fields holds the separator (it is then not
  /// kept: the cache asks the network for it again).
  static func encode(_ entry: CacheEntry) -> String? {
    var fields = [
      tag, String(entry.kind.rawValue),
      String(Int64((entry.storedAt.timeIntervalSince1970 * 1_000).rounded())),
    ]
    if let address = entry.address {
      fields += [
        "1", address.logradouro, address.complemento, address.bairro, address.localidade,
        address.uf, address.ibge,
      ]
      if let geo = address.geo {
        fields += ["\(geo.lat)", "\(geo.lon)", String(geo.raioM), geo.precisao]
      } else {
        fields += ["", "", "", ""]
      }
    } else {
      fields += ["0"] + Array(repeating: "", count: 10)
    }
    guard !fields.contains(where: { $0.contains(separator) }) else { return nil }
    return fields.joined(separator: String(separator))
  }

  /// The entry `value` holds for `cep` of `edition`; `nil` when it is not a value of this
  /// format (another tag, a field missing or malformed). A read of many values decodes them
  /// with one ``ValkeyValueDecoder``.
  static func decode(_ value: Substring, cep: Int, edition: String) -> CacheEntry? {
    var decoder = ValkeyValueDecoder(valueSizes: CollectionOfOne(value.utf8.count))
    return decoder.decode(String(value), cep: cep, edition: edition)
  }

  /// ``separator`` as its one UTF-8 byte.
  static let separatorByte = UInt8(ascii: "\u{1F}")
}

/// The keys of a Valkey cache under its prefix `P` (`cepis:` unless the caller names another):
///
/// - `P<edition>:<cep>`: one entry, its CEP as eight digits (`cepis:2026-11:01001000`);
/// - `P~editions`: a hash of the editions stored, each with when an entry of it was last
///   stored (milliseconds), for the stale answers' reads and ``CacheStore/hasEntries(of:)``;
/// - `P~live`: the edition mark, shared by the fleet (``EditionMark``);
/// - `P~claim:<edition>:<cep>`: a process's claim to ask for the CEP, for a few seconds;
/// - `P~claim:health`: a process's claim to ask `/health`, for a few seconds.
///
/// Every key expires (the entry time-to-live), so the keyspace holds at most the editions of
/// that span.
struct ValkeyKeys: Sendable {
  /// The prefix every key starts with.
  let prefix: String

  /// The key of `cep`'s entry of `edition`.
  func entry(_ cep: Int, edition: String) -> String { "\(prefix)\(edition):\(cepDigits(cep))" }
  /// The hash of the editions stored.
  var editions: String { "\(prefix)~editions" }
  /// The edition mark.
  var live: String { "\(prefix)~live" }
  /// A process's claim on `cep` of `edition`.
  func claim(_ cep: Int, edition: String) -> String {
    "\(prefix)~claim:\(edition):\(cepDigits(cep))"
  }
  /// A process's claim on the next `/health` check.
  var editionCheck: String { "\(prefix)~claim:health" }
  /// The pattern that matches every key of the cache (`SCAN`).
  var pattern: String { Self.escapedForPattern(prefix) + "*" }

  /// The CEP and edition of an entry key, `nil` for the cache's other keys or a key that is
  /// not an entry's.
  func parseEntry(_ key: Substring) -> (edition: String, cep: Int)? {
    guard key.hasPrefix(prefix) else { return nil }
    let rest = key.dropFirst(prefix.count)
    guard let colon = rest.lastIndex(of: ":"), !rest.hasPrefix("~") else { return nil }
    let digits = rest[rest.index(after: colon)...]
    guard digits.count == 8, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
      let cep = Int(digits)
    else { return nil }
    return (String(rest[..<colon]), cep)
  }

  /// `text` with the glob characters of `SCAN MATCH` escaped.
  static func escapedForPattern(_ text: String) -> String {
    var escaped = ""
    for character in text {
      if "*?[]\\".contains(character) { escaped.append("\\") }
      escaped.append(character)
    }
    return escaped
  }
}

extension EditionMark {
  /// The mark as the fleet's `P~live` value: the format tag, the edition, and when it was
  /// checked (milliseconds).
  var valkeyValue: String {
    let millis = Int64((checkedAt.timeIntervalSince1970 * 1_000).rounded())
    return [ValkeyEntryFormat.tag, edition, String(millis)].joined(
      separator: String(ValkeyEntryFormat.separator))
  }

  /// The mark a `P~live` value holds, `nil` for another format.
  init?(valkeyValue value: Substring) {
    let fields = value.split(
      separator: ValkeyEntryFormat.separator, omittingEmptySubsequences: false)
    guard fields.count == 3, fields[0] == ValkeyEntryFormat.tag, !fields[1].isEmpty,
      let millis = Int64(fields[2])
    else { return nil }
    self.init(
      edition: String(fields[1]), checkedAt: Date(timeIntervalSince1970: Double(millis) / 1_000))
  }
}
