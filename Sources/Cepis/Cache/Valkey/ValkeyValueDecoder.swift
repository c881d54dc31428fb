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

  /// A decoder of values of the sizes (in bytes) `valueSizes` lists, one per value, whose
  /// chunk has room for every one: each row's six fields and the byte after them are a part
  /// of its value, which holds its tag and three fields more.
  init(valueSizes: some Sequence<Int>) {
    var rows = 0
    var bytes = 0
    for size in valueSizes {
      rows += 1
      bytes += size
    }
    rowsLeft = rows
    bytesLeft = bytes
    writer = rows > 0 ? PackedChunkWriter(rows: rows, textBytes: bytes) : nil
  }

  /// The entry `value` (one of the values the decoder was made for) holds for `cep` of
  /// `edition`; `nil` when it is not a value of this format.
  mutating func decode(_ value: String, cep: Int, edition: String) -> CacheEntry? {
    Array(value.utf8).withUnsafeBufferPointer { decode($0, cep: cep, edition: edition) }
  }

  /// The entry the value `bytes` (one of the values the decoder was made for) holds for `cep`
  /// of `edition`; `nil` when it is not well-formed UTF-8 or not a value of this format
  /// (another tag, a field missing or malformed).
  mutating func decode(
    _ bytes: UnsafeBufferPointer<UInt8>, cep: Int, edition: String
  ) -> CacheEntry? {
    guard isValidUTF8(bytes) else { return nil }
    return withUnsafeTemporaryAllocation(of: Int.self, capacity: ValkeyEntryFormat.fieldCount) {
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
      let kindRaw = Int(fields.string(1)), let kind = CacheEntryKind(rawValue: kindRaw),
      let millis = Int64(fields.string(2))
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
        let raio = Int(fields.string(12))
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

    /// Field `index` as a string (valid UTF-8: the value was validated, and a field is cut at
    /// ASCII separators).
    func string(_ index: Int) -> String { String(decoding: self[index], as: UTF8.self) }
  }
}
