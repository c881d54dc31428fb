// The packed chunk: the layout of the one buffer a batch answer's rows share, its reader
// (`PackedFields`) and its writer (`PackedChunkWriter`). They change together, so they are
// one file. Every pointer into a chunk is taken while something holds the chunk (an address,
// or the writer), and every offset through it is inside the room the chunk was made with;
// each access states which, next to it.

/// The six fields of one row of a *packed chunk*: one allocation (`ManagedBuffer`'s tail)
/// that holds the rows of a whole batch answer, their fields as valid UTF-8, and where each
/// field ends. A chunk of 500 rows costs one allocation, not 500; every address read from it
/// holds the chunk (one reference) and its row's number.
///
/// The tail is the *ends table* (six per row: the end of each field, counted from the start of
/// the text; `UInt16`s when the text is 64 KiB at most, as a batch answer's 500 rows are, else
/// `UInt32`s) and then the text: each field followed by one byte that is no part of it, so
/// that a field starts one byte after the one before it ends, across rows (and a batch
/// row's six fields, unquoted, are copied from the response as they stand there, commas and
/// all, in one copy). A chunk is written once, by ``PackedChunkWriter``, before anyone else
/// can see it, and never again; only reads follow, so sharing it between threads is safe:
/// that is the `@unchecked Sendable` (`ManagedBuffer` itself is never `Sendable`).
///
/// An address holds its whole chunk, as a `Substring` holds its `String`: a run's memo
/// re-packs the answers it keeps for long on their own (see `LookupMemo`), so that its few
/// long-lived answers do not hold every chunk they came in.
struct PackedFields: @unchecked Sendable {
  /// A chunk: the tail holds the ends table for `rowCapacity` rows, then the text.
  final class Storage: ManagedBuffer<PackedChunkHeader, UInt8> {}

  private let storage: Storage
  /// The row's number in its chunk.
  private let row: UInt32

  fileprivate init(storage: Storage, row: UInt32) {
    self.storage = storage
    self.row = row
  }

  /// A chunk of one row, whose six fields (valid UTF-8, `textBytes` bytes in all) `write`
  /// appends and ends, in order.
  static func single(textBytes: Int, _ write: (inout PackedChunkWriter) -> Void)
    -> PackedFields
  {
    var writer = PackedChunkWriter(rows: 1, textBytes: textBytes + 6)
    write(&writer)
    return writer.endRow()
  }

  /// The six text fields of `address` in a chunk of their own (one allocation the size of
  /// the row).
  static func alone(_ address: Address) -> PackedFields {
    var total = 0
    address.forEachUTF8Field { total += $0.count }
    return single(textBytes: total) { $0.appendFields(of: address) }
  }

  /// Whether both name the same row of the same chunk.
  static func === (lhs: PackedFields, rhs: PackedFields) -> Bool {
    lhs.storage === rhs.storage && lhs.row == rhs.row
  }

  /// Which chunk the row is in, how many rows it has room for, and the bytes of each end in
  /// its ends table (for tests).
  var chunkIdentity: ObjectIdentifier { ObjectIdentifier(storage) }
  var chunkRowCapacity: Int { storage.header.rowCapacity }
  var chunkEndWidth: Int { storage.header.endWidth }

  /// Whether this row's chunk holds other rows (a row of a batch answer's chunk).
  var sharesItsChunk: Bool { storage.header.rowCapacity > 1 }

  /// Calls `body` with the UTF-8 bytes of `field`, in place.
  func withUTF8<R>(_ field: AddressText.Field, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
    let row = Int(self.row)
    // The pointers live for the closure, and `self` holds the chunk meanwhile. `row` was
    // written (`endRow` made this value), so its six ends are in the table, and each end is
    // inside the text the chunk was made with.
    return storage.withUnsafeMutablePointers { header, tail in
      let index = row * 6 + field.rawValue
      let ends = PackedChunkHeader.Ends(
        UnsafeMutableRawPointer(tail), width: header.pointee.endWidth)
      // One byte after the field before it (see the type's comment).
      let start = index == 0 ? 0 : ends[index - 1] + 1
      let end = ends[index]
      return body(
        UnsafeBufferPointer(start: tail + header.pointee.textOffset + start, count: end - start))
    }
  }

  subscript(field: AddressText.Field) -> String {
    // Validated when the row was packed: decoding copies, it never repairs.
    withUTF8(field) { String(decoding: $0, as: UTF8.self) }
  }
}

/// The header of a packed chunk (see ``PackedFields``).
struct PackedChunkHeader {
  /// How many rows the ends table has room for.
  let rowCapacity: Int
  /// The bytes of each end in the ends table: 2 when every end fits a `UInt16`, else 4.
  let endWidth: Int
  /// Where the text starts in the tail: after the ends table.
  var textOffset: Int { rowCapacity * 6 * endWidth }

  /// The ends table of a chunk: its ends, each `width` bytes.
  struct Ends {
    /// Where the table starts: the start of the chunk's tail.
    let base: UnsafeMutableRawPointer
    /// The bytes of each end, 2 or 4.
    let width: Int

    /// The table at `base`, of ends `width` bytes each.
    init(_ base: UnsafeMutableRawPointer, width: Int) {
      self.base = base
      self.width = width
    }

    /// The end of field `index` (counted across rows: row × 6 + field). Unaligned loads and
    /// stores at `index × width`: the caller's index is below the table's 6 × rows.
    subscript(index: Int) -> Int {
      get {
        width == 2
          ? Int(base.loadUnaligned(fromByteOffset: index * 2, as: UInt16.self))
          : Int(base.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self))
      }
      nonmutating set {
        if width == 2 {
          base.storeBytes(
            of: UInt16(truncatingIfNeeded: newValue), toByteOffset: index * 2, as: UInt16.self)
        } else {
          base.storeBytes(
            of: UInt32(truncatingIfNeeded: newValue), toByteOffset: index * 4, as: UInt32.self)
        }
      }
    }
  }

  /// A chunk with room for `rows` rows and `textBytes` bytes of text, not yet written. An end
  /// is below `textBytes` (each field is followed by a byte of its own): with 64 KiB of text
  /// at most, every end fits two bytes.
  static func allocate(rows: Int, textBytes: Int) -> PackedFields.Storage {
    precondition(rows >= 0 && textBytes >= 0 && textBytes <= Int(UInt32.max))
    let header = PackedChunkHeader(
      rowCapacity: rows, endWidth: textBytes <= Int(UInt16.max) + 1 ? 2 : 4)
    let buffer = PackedFields.Storage.create(minimumCapacity: header.textOffset + textBytes) {
      _ in header
    }
    // `create` called on the subclass makes an instance of it.
    return unsafeDowncast(buffer, to: PackedFields.Storage.self)
  }
}

/// Writes the rows of one packed chunk (see ``PackedFields``), a field at a time, before
/// anyone else can see it: the batch decoder's. Every write is checked against the room the
/// chunk was made with.
struct PackedChunkWriter {
  private let storage: PackedFields.Storage
  private let ends: PackedChunkHeader.Ends
  private let text: UnsafeMutablePointer<UInt8>
  /// How many rows the chunk has room for.
  let rowCapacity: Int
  /// How many bytes of text the chunk has room for.
  private let textCapacity: Int
  /// Rows finished so far.
  private(set) var rows = 0
  /// Fields of the current row finished so far.
  private var fields = 0
  /// Text bytes written so far.
  private var written = 0

  /// A writer of a new chunk with room for `rows` rows and `textBytes` bytes of text.
  init(rows: Int, textBytes: Int) {
    storage = PackedChunkHeader.allocate(rows: rows, textBytes: textBytes)
    rowCapacity = rows
    textCapacity = textBytes
    // The pointer outlives the closure: sound because the writer holds the storage for as
    // long as it keeps the pointer, and a `ManagedBuffer`'s tail never moves.
    let tail = storage.withUnsafeMutablePointerToElements { $0 }
    let header = storage.header
    ends = PackedChunkHeader.Ends(UnsafeMutableRawPointer(tail), width: header.endWidth)
    text = tail + header.textOffset
  }

  /// Appends `count` bytes at `source` to the current field (valid UTF-8, as a whole field).
  mutating func append(_ source: UnsafePointer<UInt8>, count: Int) {
    precondition(count >= 0 && written + count <= textCapacity, "a packed chunk overflows")
    // In the text's room (the precondition); `source` is the caller's, alive for the call.
    (text + written).initialize(from: source, count: count)
    written += count
  }

  /// Appends one byte to the current field.
  mutating func append(_ byte: UInt8) {
    precondition(written < textCapacity, "a packed chunk overflows")
    // In the text's room (the precondition).
    text[written] = byte
    written += 1
  }

  /// Appends `bytes` to the current field (valid UTF-8, as a whole field).
  mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let base = bytes.baseAddress else { return }
    append(base, count: bytes.count)
  }

  /// Appends the six text fields of `address`, each ended: a row of it, but for
  /// ``endRow()``.
  mutating func appendFields(of address: Address) {
    address.forEachUTF8Field { field in
      append(field)
      endField()
    }
  }

  /// Ends the current field, and writes the byte that follows it.
  mutating func endField() {
    precondition(fields < 6 && rows < rowCapacity, "a packed chunk's row has six fields")
    precondition(written < textCapacity, "a packed chunk overflows")
    // Both in the chunk's room (the preconditions: a field of a row it has room for, a byte
    // of text it has room for).
    ends[rows * 6 + fields] = written
    text[written] = UInt8(ascii: ",")
    written += 1
    fields += 1
  }

  /// Writes a whole row at once, and ends it: the `count` bytes at `source` hold its six
  /// fields in order, each but the last followed by one byte that is no part of it (a comma);
  /// `fieldEnds` are where the fields end, counted from `source`.
  mutating func appendRow(
    _ source: UnsafePointer<UInt8>, count: Int,
    ends fieldEnds: (Int, Int, Int, Int, Int, Int)
  ) -> PackedFields {
    precondition(fields == 0 && rows < rowCapacity, "a whole row starts a row")
    precondition(written + count + 1 <= textCapacity, "a packed chunk overflows")
    let (e0, e1, e2, e3, e4, e5) = fieldEnds
    precondition(
      e0 >= 0 && e1 > e0 && e2 > e1 && e3 > e2 && e4 > e3 && e5 > e4 && e5 == count,
      "a whole row's fields end in order, one byte apart at least")
    // `count + 1` bytes in the text's room, and six ends of a row the table has room for
    // (the preconditions); `source` is the caller's, alive for the call.
    (text + written).initialize(from: source, count: count)
    text[written + count] = UInt8(ascii: ",")
    let row = rows * 6
    ends[row] = written + e0
    ends[row + 1] = written + e1
    ends[row + 2] = written + e2
    ends[row + 3] = written + e3
    ends[row + 4] = written + e4
    ends[row + 5] = written + e5
    written += count + 1
    fields = 6
    return endRow()
  }

  /// Ends the current row (its six fields ended): its fields, as an address holds them.
  mutating func endRow() -> PackedFields {
    precondition(fields == 6, "a packed chunk's row has six fields")
    fields = 0
    rows += 1
    return PackedFields(storage: storage, row: UInt32(rows - 1))
  }
}
