import Foundation

// The `/csv` answer decoder of the bulk path. No `String` per field and no allocation per row:
// a pass over the body's bytes notes each answered row's fields, then they are copied,
// unescaped, into the answer's one packed buffer (`PackedChunkWriter`), made to their size,
// and become strings only when a caller reads them (a row whose six fields are unquoted and
// in order, in one copy). Anything but
// well-formed UTF-8 CSV (a quote never closed, text after a closing quote, invalid UTF-8) is
// left to the `CSVReader`-based decoder, which says exactly what is wrong; tests and the
// fuzzer hold the two to the same answers. Both decoders are in this one file (some 430
// lines), as they must be read side by side.

extension Client {
  /// The rows of a `/csv` answer in `chunk`'s order (8-digit CEPs): an address, or `nil` for
  /// a CEP that does not exist or that no row answered. Each row is keyed by its own `cep`
  /// column; the first row for a CEP wins; a row for a CEP not asked for is ignored.
  ///
  /// - Throws: ``CepisError/invalidResponse(_:)`` without the `cep` and `localidade`
  ///   columns or for an empty answer; `CSVError` for malformed CSV.
  static func decodeBatchRows(_ body: Data, chunk: [String]) throws -> [Address?] {
    try decodeBatchRows(
      body, positions: CEPTable(positionsOf: chunk), count: chunk.count, cep: { chunk[$0] })
  }

  /// ``decodeBatchRows(_:chunk:)`` for a chunk of distinct CEP numbers (the bulk engine's
  /// asks: no string per CEP unless the reader-based decoder is needed, and no table of
  /// positions while the rows come in the chunk's order).
  package static func decodeBatchRows(_ body: Data, numbers: [Int]) throws -> [Address?] {
    assert(Set(numbers).count == numbers.count, "a chunk's CEP numbers are distinct")
    let packed = body.withUnsafeBytes { raw in
      packedBatchRows(
        raw.bindMemory(to: UInt8.self), positions: ChunkPositions(distinct: numbers),
        count: numbers.count)
    }
    return try rows(
      packed, body: body, positions: { CEPTable(positionsOf: numbers) }, count: numbers.count,
      cep: { cepString(numbers[$0]) })
  }

  /// The decoder over a chunk given as each CEP's position (`positions`), its length, and
  /// the 8-digit string of the CEP at a position (for the reader-based decoder).
  private static func decodeBatchRows(
    _ body: Data, positions: CEPTable, count: Int, cep: (Int) -> String
  ) throws -> [Address?] {
    let packed = body.withUnsafeBytes { raw in
      packedBatchRows(
        raw.bindMemory(to: UInt8.self), positions: ChunkPositions(table: positions), count: count)
    }
    return try rows(packed, body: body, positions: { positions }, count: count, cep: cep)
  }

  /// The answer of the packed decoder, or of the reader-based one when the body is not plain.
  private static func rows(
    _ packed: PackedBatch, body: Data, positions: () -> CEPTable, count: Int,
    cep: (Int) -> String
  ) throws -> [Address?] {
    switch packed {
    case .rows(let rows): return rows
    case .missingColumns:
      throw CepisError.invalidResponse(
        "CSV without the cep and localidade columns: \(HTTPResponse.preview(of: body))")
    case .notPlain:
      return try decodeBatchRowsWithReader(
        body, positions: positions(), count: count, cep: cep)
    }
  }

  /// What the packed decoder made of a body.
  enum PackedBatch {
    /// The answer, in the chunk's order.
    case rows([Address?])
    /// A header without `cep` or `localidade`.
    case missingColumns
    /// Not plain CSV (or empty): the reader-based decoder decides.
    case notPlain
  }

  /// Decodes a `/csv` body straight from its bytes (see the file's header comment).
  static func packedBatchRows(_ bytes: UnsafeBufferPointer<UInt8>, chunk: [String])
    -> PackedBatch
  {
    packedBatchRows(
      bytes, positions: ChunkPositions(table: CEPTable(positionsOf: chunk)), count: chunk.count)
  }

  /// ``packedBatchRows(_:chunk:)`` over a chunk given as each CEP's position and its length.
  static func packedBatchRows(
    _ bytes: UnsafeBufferPointer<UInt8>, positions: ChunkPositions, count: Int
  ) -> PackedBatch {
    var positions = positions
    guard isValidUTF8(bytes) else { return .notPlain }
    var index = 0
    if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
    guard index < bytes.count else { return .notPlain }

    // The header: the only strings built here.
    var header: [String] = []
    guard
      let afterHeader = scanCSVRecord(
        bytes, from: index,
        { _, span in header.append(String(decoding: span.unescaped(in: bytes), as: UTF8.self)) })
    else { return .notPlain }
    index = afterHeader.next
    let columns = BatchColumns(header: header)
    guard let cepColumn = columns.cep, columns.localidade != nil else {
      return .missingColumns
    }
    // For each header column, which slot it fills: 0 the CEP, 1...6 the packed fields.
    var slotOfColumn = [Int](repeating: -1, count: header.count)
    slotOfColumn[cepColumn] = 0
    let packedColumns = [
      columns.logradouro, columns.complemento, columns.bairro, columns.localidade, columns.uf,
      columns.ibge,
    ]
    for (field, column) in packedColumns.enumerated() {
      if let column { slotOfColumn[column] = field + 1 }
    }

    // Whether the six packed fields are columns 1...6, in order: then a row whose six
    // fields are there, unquoted, is copied in one piece.
    let inOrder = slotOfColumn.count >= 7 && (1...6).allSatisfy { slotOfColumn[$0] == $0 }

    var answered = [Bool](repeating: false, count: count)
    // Two passes. The first scans the rows and notes, for each answered one (at most one per
    // asked CEP), its position, its CEP and its six fields' spans, and how many bytes of text
    // they take; the second copies them into a chunk made to that size (rows, an ends table
    // and text only for the answers kept: no room for the CEP column, the header or the rows
    // of CEPs that do not exist, and no copy of the chunk to shed it afterwards).
    let absent = CSVFieldSpan(start: -1, end: -1, escaped: false)
    let spanCount = 6 * count
    return withUnsafeTemporaryAllocation(of: CSVFieldSpan.self, capacity: 7 + spanCount) {
      buffer in
      // A row's spans by slot (a span of start -1: the row has no such column): slot 0 the
      // CEP, 1...6 the packed fields; then the packed fields of each answered row.
      let spans = UnsafeMutableBufferPointer(rebasing: buffer[0..<7])
      let kept = UnsafeMutableBufferPointer(rebasing: buffer[7...])
      spans.initialize(repeating: absent)
      return withUnsafeTemporaryAllocation(of: (slot: Int32, cep: Int32).self, capacity: count) {
        rows in
        var rowCount = 0
        var textBytes = 0
        let columnCount = header.count
        while index < bytes.count {
          guard
            let record = scanCSVRecord(
              bytes, from: index,
              { column, span in
                guard column < columnCount else { return }
                let slot = slotOfColumn[column]
                if slot >= 0 { spans[slot] = span }
              })
          else { return .notPlain }
          index = record.next
          // A row with every column wrote every slot; a shorter one leaves the slots of the
          // columns it lacks absent (not the previous row's).
          if record.fields < columnCount {
            for column in record.fields..<columnCount where slotOfColumn[column] >= 0 {
              spans[slotOfColumn[column]] = absent
            }
          }
          let cep = spans[0]
          guard cep.start >= 0, !cep.escaped,
            let number = cepNumber(UnsafeBufferPointer(rebasing: bytes[cep.start..<cep.end])),
            let position = positions.position(of: number), !answered[Int(position)]
          else { continue }
          answered[Int(position)] = true
          let localidade = spans[AddressText.Field.localidade.rawValue + 1]
          guard localidade.start >= 0, localidade.end > localidade.start else { continue }
          for field in 0..<6 {
            let span = spans[field + 1]
            kept[rowCount * 6 + field] = span
            // An escaped field's text is shorter than its span: room enough.
            if span.start >= 0 { textBytes += span.end - span.start }
            textBytes += 1
          }
          rows[rowCount] = (position, Int32(number))
          rowCount += 1
        }
        var found = [Address?](repeating: nil, count: count)
        guard rowCount > 0 else { return .rows(found) }
        var chunk = PackedChunkWriter(rows: rowCount, textBytes: textBytes)
        // Written through a buffer: no uniqueness check per row, nor the retain and release of
        // each address around it.
        found.withUnsafeMutableBufferPointer { found in
          for row in 0..<rowCount {
            let fields = UnsafeBufferPointer(rebasing: kept[row * 6..<row * 6 + 6])
            let packed: PackedFields
            if inOrder, let whole = wholeRow(fields) {
              packed = chunk.appendRow(
                bytes.baseAddress! + fields[0].start, count: whole.count, ends: whole.ends)
            } else {
              packed = pack(bytes, fields, into: &chunk)
            }
            let (slot, number) = rows[row]
            found[Int(slot)] = Address(cepNumber: Int(number), packed: consume packed)
          }
        }
        return .rows(found)
      }
    }
  }

  /// When the six fields of a row (`fields`, in the packed order) are all there, unquoted
  /// and one comma apart, in order: the length of the bytes from the first's start to the
  /// last's end, and where each field ends in them.
  private static func wholeRow(_ fields: UnsafeBufferPointer<CSVFieldSpan>)
    -> (count: Int, ends: (Int, Int, Int, Int, Int, Int))?
  {
    let start = fields[0].start
    guard start >= 0 else { return nil }
    for field in 0..<6 {
      let span = fields[field]
      guard span.start >= 0, !span.escaped else { return nil }
      // Unquoted and one comma after the field before: the bytes between are that comma.
      if field > 0 && span.start != fields[field - 1].end + 1 { return nil }
    }
    return (
      fields[5].end - start,
      (
        fields[0].end - start, fields[1].end - start, fields[2].end - start,
        fields[3].end - start, fields[4].end - start, fields[5].end - start
      )
    )
  }

  /// Copies the six fields of a row (`fields`, in the packed order; those absent empty),
  /// unescaped, into `chunk`.
  private static func pack(
    _ bytes: UnsafeBufferPointer<UInt8>, _ fields: UnsafeBufferPointer<CSVFieldSpan>,
    into chunk: inout PackedChunkWriter
  ) -> PackedFields {
    for span in fields {
      if span.start >= 0 {
        if span.escaped {
          var cursor = span.start
          while cursor < span.end {
            chunk.append(bytes[cursor])
            // A doubled quote inside a quoted field is one quote.
            cursor += bytes[cursor] == UInt8(ascii: "\"") ? 2 : 1
          }
        } else if span.end > span.start {
          chunk.append(bytes.baseAddress! + span.start, count: span.end - span.start)
        }
      }
      chunk.endField()
    }
    return chunk.endRow()
  }
}

/// Where each CEP of a chunk is in the decoder's answer: by a table of positions, or, for a
/// chunk of distinct numbers, by the chunk itself while rows come in its order (the table is
/// built at the first row out of order).
struct ChunkPositions {
  private let numbers: [Int]
  private var table: CEPTable?
  /// The position after the last one found.
  private var next = 0

  /// Positions by `table`.
  init(table: CEPTable) {
    self.numbers = []
    self.table = table
  }

  /// Positions in `numbers`, distinct CEP numbers.
  init(distinct numbers: [Int]) {
    self.numbers = numbers
    self.table = nil
  }

  /// The position of `number` in the chunk, or `nil` when the chunk does not hold it.
  mutating func position(of number: Int) -> Int32? {
    if next < numbers.count && numbers[next] == number {
      next += 1
      return Int32(next - 1)
    }
    if table == nil { table = CEPTable(positionsOf: numbers) }
    guard let position = table?.value(for: number) else { return nil }
    next = Int(position) + 1
    return position
  }
}

/// Where one CSV field's text is: `start..<end` inside its quotes (if any), and whether it
/// holds doubled quotes to undo.
struct CSVFieldSpan {
  var start = 0
  var end = 0
  var escaped = false

  /// The field's text: the bytes themselves, or a copy with each doubled quote undone.
  func unescaped(in bytes: UnsafeBufferPointer<UInt8>) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(end - start)
    var cursor = start
    while cursor < end {
      out.append(bytes[cursor])
      cursor += escaped && bytes[cursor] == UInt8(ascii: "\"") ? 2 : 1
    }
    return out
  }
}

/// Scans the comma-separated record that starts at `start` (RFC 4180 as `CSVReader` reads
/// it: a field is quoted only when its first byte is a quote; LF, CRLF or a lone CR ends a
/// record), calling `field` with each field's index and span. Returns where the next record
/// starts, or `nil` for a quote never closed or a byte after a closing quote.
func scanCSVRecord(
  _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, _ field: (Int, CSVFieldSpan) -> Void
) -> (next: Int, fields: Int)? {
  let quote = UInt8(ascii: "\"")
  let comma = UInt8(ascii: ",")
  let lineFeed = UInt8(ascii: "\n")
  let carriageReturn = UInt8(ascii: "\r")
  let end = bytes.count
  var index = start
  var count = 0
  while true {
    var span = CSVFieldSpan()
    if index < end && bytes[index] == quote {
      var cursor = index + 1
      span.start = cursor
      while true {
        guard cursor < end else { return nil }
        if bytes[cursor] == quote {
          if cursor + 1 < end && bytes[cursor + 1] == quote {
            span.escaped = true
            cursor += 2
            continue
          }
          break
        }
        cursor += 1
      }
      span.end = cursor
      index = cursor + 1
      if index < end {
        let byte = bytes[index]
        if byte != comma && byte != lineFeed && byte != carriageReturn { return nil }
      }
    } else {
      var cursor = index
      while cursor < end {
        let byte = bytes[cursor]
        if byte == comma || byte == lineFeed || byte == carriageReturn { break }
        cursor += 1
      }
      span.start = index
      span.end = cursor
      index = cursor
    }
    field(count, span)
    count += 1
    if index < end && bytes[index] == comma {
      index += 1
      continue
    }
    // A line end, or the end of the input.
    if index < end {
      if bytes[index] == carriageReturn && index + 1 < end && bytes[index + 1] == lineFeed {
        index += 2
      } else {
        index += 1
      }
    }
    return (index, count)
  }
}

/// Whether `bytes` are well-formed UTF-8 (no overlong forms, surrogates or values past
/// U+10FFFF), ASCII eight bytes at a time.
func isValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
  guard let base = bytes.baseAddress else { return true }
  let count = bytes.count
  let high: UInt64 = 0x8080_8080_8080_8080
  var index = 0
  while index < count {
    if index + 16 <= count {
      // Two words at a time while the text is ASCII.
      let first = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
      let second = UnsafeRawPointer(base + index + 8).loadUnaligned(as: UInt64.self)
      if (first | second) & high == 0 {
        index += 16
        continue
      }
    }
    if index + 8 <= count {
      let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
      let highBits = word & high
      if highBits == 0 {
        index += 8
        continue
      }
      // Straight to the word's first byte that is not ASCII (in memory order: the lowest
      // byte of the little-endian word), not one ASCII byte at a time up to it.
      index += highBits.trailingZeroBitCount >> 3
    }
    let lead = base[index]
    if lead < 0x80 {
      index += 1
      continue
    }
    func continuation(_ offset: Int) -> UInt8? {
      guard index + offset < count else { return nil }
      let byte = base[index + offset]
      return byte & 0xC0 == 0x80 ? byte : nil
    }
    switch lead {
    case 0xC2...0xDF:
      guard continuation(1) != nil else { return false }
      index += 2
    case 0xE0...0xEF:
      guard let second = continuation(1), continuation(2) != nil else { return false }
      if lead == 0xE0 && second < 0xA0 { return false }  // overlong
      if lead == 0xED && second >= 0xA0 { return false }  // a surrogate
      index += 3
    case 0xF0...0xF4:
      guard let second = continuation(1), continuation(2) != nil, continuation(3) != nil
      else { return false }
      if lead == 0xF0 && second < 0x90 { return false }  // overlong
      if lead == 0xF4 && second >= 0x90 { return false }  // past U+10FFFF
      index += 4
    default:
      return false
    }
  }
  return true
}
