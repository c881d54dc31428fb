import Foundation

/// Reads the values of one read of the Valkey cache (``ValkeyEntryFormat``): the addresses
/// without coordinates, as a bulk chunk's are, land in one packed chunk (see ``PackedFields``),
/// their six fields copied from the value as they stand there in one copy each, rather than
/// in an object of strings each. A bulk run then holds one object per read, not one per CEP,
/// as it does for the rows of a `/csv` answer; an address with coordinates keeps its strings.
///
/// The decoder works on the values' UTF-8 bytes: the separator is ASCII, so each position it
/// finds is a character boundary, and no grapheme breaking is paid per character.
struct ValkeyValueDecoder {
  /// The chunk of the addresses without coordinates; `nil` when there is no value to read.
  private var writer: PackedChunkWriter?
  /// The rows and bytes of text the chunk still has room for.
  private var rowsLeft: Int
  private var bytesLeft: Int

  /// A decoder of values of `textBytes` bytes in all, `rows` of them, whose chunk has room for
  /// every one: each row's six fields and the byte after them are a part of its value, which
  /// holds its tag and three fields more.
  init(rows: Int, textBytes: Int) {
    rowsLeft = rows
    bytesLeft = textBytes
    writer = rows > 0 ? PackedChunkWriter(rows: rows, textBytes: textBytes) : nil
  }

  /// A decoder of `values`.
  init(for values: some Collection<String?>) {
    var rows = 0
    var bytes = 0
    for case let value? in values {
      rows += 1
      bytes += value.utf8.count
    }
    self.init(rows: rows, textBytes: bytes)
  }

  /// The entry `value` (one of the values the decoder was made for) holds for `cep` of
  /// `edition`; `nil` when it is not a value of this format (another tag, a field missing or
  /// malformed).
  mutating func decode(_ value: String, cep: Int, edition: String) -> CacheEntry? {
    let read = value.utf8.withContiguousStorageIfAvailable {
      decode(validUTF8: $0, cep: cep, edition: edition)
    }
    if let read { return read }
    return Array(value.utf8).withUnsafeBufferPointer {
      decode(validUTF8: $0, cep: cep, edition: edition)
    }
  }

  /// The entry the value `bytes` (one of the values the decoder was made for) holds for `cep`
  /// of `edition`; `nil` when it is not well-formed UTF-8 or not a value of this format.
  mutating func decode(
    _ bytes: UnsafeBufferPointer<UInt8>, cep: Int, edition: String
  ) -> CacheEntry? {
    guard isValidUTF8(bytes) else { return nil }
    return decode(validUTF8: bytes, cep: cep, edition: edition)
  }

  private mutating func decode(
    validUTF8 bytes: UnsafeBufferPointer<UInt8>, cep: Int, edition: String
  ) -> CacheEntry? {
    withUnsafeTemporaryAllocation(of: Int.self, capacity: ValkeyEntryFormat.fieldCount) {
      ends in
      // Where each field ends (its separator's position; the last one at the end).
      var count = 0
      for index in bytes.indices where bytes[index] == ValkeyEntryFormat.separatorByte {
        guard count < ValkeyEntryFormat.fieldCount - 1 else { return nil }
        ends[count] = index
        count += 1
      }
      guard count == ValkeyEntryFormat.fieldCount - 1 else { return nil }
      ends[count] = bytes.count
      let fields = Fields(bytes: bytes, ends: UnsafeBufferPointer(ends))
      return decode(fields, cep: cep, edition: edition)
    }
  }

  private mutating func decode(_ fields: Fields, cep: Int, edition: String) -> CacheEntry? {
    guard fields[0].elementsEqual(ValkeyEntryFormat.tag.utf8),
      let kindRaw = fields.integer(1), let kind = CacheEntryKind(rawValue: kindRaw),
      let millis = fields.integer(2)
    else { return nil }
    let storedAt = Date(timeIntervalSince1970: Double(millis) / 1_000)
    let address: Address?
    switch fields.string(3) {
    case "0": address = nil
    case "1":
      guard let read = fields[10].isEmpty ? packed(fields, cep: cep) : strings(fields, cep: cep)
      else { return nil }
      address = read
    default: return nil
    }
    return CacheEntry(cep: cep, address: address, edition: edition, storedAt: storedAt, kind: kind)
  }

  /// The address without coordinates `fields` hold, as a row of the chunk.
  private mutating func packed(_ fields: Fields, cep: Int) -> Address? {
    let start = fields.start(4)
    let count = fields.end(9) - start
    guard var writer, rowsLeft > 0, bytesLeft > count, let base = fields.bytes.baseAddress else {
      return strings(fields, cep: cep)
    }
    self.writer = nil  // uniquely held while it writes
    let row = writer.appendRow(
      base + start, count: count,
      ends: (
        fields.end(4) - start, fields.end(5) - start, fields.end(6) - start,
        fields.end(7) - start, fields.end(8) - start, fields.end(9) - start
      ))
    self.writer = writer
    rowsLeft -= 1
    bytesLeft -= count + 1
    return Address(cepNumber: cep, packed: row)
  }

  /// The address `fields` hold, as strings (with its coordinates, when it has them).
  private func strings(_ fields: Fields, cep: Int) -> Address? {
    var geo: Geo?
    if !fields[10].isEmpty {
      // `Double(Substring)` is macOS 11: through `String`.
      guard let lat = Double(fields.string(10)), let lon = Double(fields.string(11)),
        let raio = fields.integer(12)
      else { return nil }
      geo = Geo(lat: lat, lon: lon, raioM: raio, precisao: fields.string(13))
    }
    return Address(
      cep: cepDigits(cep), logradouro: fields.string(4), complemento: fields.string(5),
      bairro: fields.string(6), localidade: fields.string(7), uf: fields.string(8),
      ibge: fields.string(9), geo: geo, source: .cepis)
  }

  /// The fields of one value: its bytes and where each field ends.
  private struct Fields {
    let bytes: UnsafeBufferPointer<UInt8>
    let ends: UnsafeBufferPointer<Int>

    /// Where field `index` starts: one byte after the one before it ends.
    func start(_ index: Int) -> Int { index == 0 ? 0 : ends[index - 1] + 1 }
    /// Where field `index` ends.
    func end(_ index: Int) -> Int { ends[index] }

    /// The bytes of field `index`.
    subscript(index: Int) -> UnsafeBufferPointer<UInt8> {
      UnsafeBufferPointer(rebasing: bytes[start(index)..<end(index)])
    }

    /// Field `index` as a string (valid UTF-8: a part of a `String` between two ASCII bytes).
    func string(_ index: Int) -> String { String(decoding: self[index], as: UTF8.self) }

    /// Field `index` as a decimal integer (an optional sign, then digits), `nil` otherwise.
    func integer(_ index: Int) -> Int? {
      let digits = self[index]
      guard !digits.isEmpty, digits.count <= 18 else { return nil }  // no overflow
      var value = 0
      var sign = 1
      for (offset, byte) in digits.enumerated() {
        if offset == 0, byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+"), digits.count > 1 {
          sign = byte == UInt8(ascii: "-") ? -1 : 1
          continue
        }
        guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        value = value * 10 + Int(byte - UInt8(ascii: "0"))
      }
      return sign * value
    }
  }
}
