import Foundation

// The packed `/csv` answer decoder of the bulk path. No `String` per field and no allocation
// per row: a pass over the body's bytes notes each answered row's fields, then they are
// copied, unescaped, into the answer's one packed buffer (`PackedChunkWriter`), made to their
// size, and become strings only when a caller reads them (a row whose six fields are unquoted
// and in order, in one copy). Anything but well-formed UTF-8 CSV (a quote never closed, text
// after a closing quote, invalid UTF-8) is left to the `CSVReader`-based decoder
// (`decodeBatchRowsWithReader`, in `Bulk/Client+Batch.swift`), which says exactly what is
// wrong; tests and the fuzzer hold the two to the same answers. The byte scanners both use
// are in `BatchCSVScan.swift`.
//
// Unsafe accesses here read the body's bytes and the decoder's temporary spans through
// buffer pointers, unchecked in release builds: each states next to it why it is in bounds.

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
    // The bytes are alive for the closure, and the decoder keeps no pointer past it: what it
    // keeps is copied into its packed chunk.
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
    // As above: no pointer to the bytes outlives the closure.
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
    // Three bytes read only when there are three.
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
    // Both temporary buffers live for their closures only, and no pointer into them escapes.
    return withUnsafeTemporaryAllocation(of: CSVFieldSpan.self, capacity: 7 + spanCount) {
      buffer in
      // A row's spans by slot (a span of start -1: the row has no such column): slot 0 the
      // CEP, 1...6 the packed fields; then the packed fields of each answered row. `kept`
      // has room for six per answered row: at most `count` rows are answered (one per
      // position, `answered`), and it is written before it is read.
      let spans = UnsafeMutableBufferPointer(rebasing: buffer[0..<7])
      let kept = UnsafeMutableBufferPointer(rebasing: buffer[7...])
      spans.initialize(repeating: absent)
      // One entry per answered row (at most `count`), written before it is read.
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
                // A slot is -1 or 0...6, and `spans` holds 7.
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
          // A span present lies inside `bytes` (the scanner's); `position` is below `count`,
          // the size of `answered` and of `rows`, and each is answered once: `rowCount`
          // stays below `count`, and `kept` has room for its six fields.
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
        // each address around it. `row` is below `rowCount`, whose entries of `rows` and `kept`
        // are written; a row's `slot` is a position, below `count`, the size of `found`.
        found.withUnsafeMutableBufferPointer { found in
          for row in 0..<rowCount {
            let fields = UnsafeBufferPointer(rebasing: kept[row * 6..<row * 6 + 6])
            let packed: PackedFields
            if inOrder, let whole = wholeRow(fields) {
              // `whole.count` bytes from the first field's start are the row's own, inside
              // `bytes`; `appendRow` checks them against the chunk's room.
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
    // `fields` holds six spans (a row's, in `kept`): every index below is 0...5.
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
    // A span present (start ≥ 0) lies inside `bytes`, as the scanner noted it; the chunk's
    // appends check its room.
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
