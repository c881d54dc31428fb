import Cepis
import CepisSupport
import Foundation

/// One data row of an `enrich` input: its exact bytes and line end (written back untouched)
/// and its CEP, parsed once, as the row type of the `lookups` stream.
struct EnrichRow: Sendable {
  /// The record's bytes, without its line end.
  var bytes: [UInt8]
  /// Its line end (`\n`, `\r\n`, or nothing on a last line without one).
  var terminator: [UInt8]
  /// The input line the record starts on.
  var line: Int
  /// The CEP of the CEP column as a number, or `nil` when it is not a CEP.
  var cep: Int?
  /// Whether the CEP was 7 digits, read with the leading zero a spreadsheet dropped.
  var padded = false
  /// An empty line: written back as it is, with nothing appended.
  var isBlank: Bool
}

/// The input of one `enrich` run: the file, its CSV reader and what the summary and the
/// progress line need from the reading (bytes read, distinct CEPs seen).
///
/// `@unchecked Sendable`: the `lookups` stream needs a `Sendable` sequence of rows, and this
/// reader is the state of that sequence. It is used by one task at a time — the job reads the
/// header and the rows to skip before the stream starts, then only the stream's iterator
/// reads rows, on the job's consumer task, which also reads the counters between two calls
/// to the iterator. Nothing touches it concurrently.
final class EnrichReader: @unchecked Sendable {
  let input: InputFile
  /// The index of the CEP column (set once the header is read).
  var column = 0 {
    // Only the CEP's column becomes a `String`: the row is copied through as its raw bytes.
    didSet { reader.onlyField = column }
  }
  /// Bytes of the input consumed so far.
  private(set) var bytesRead = 0
  /// Distinct valid CEPs in the rows answered so far (see ``noteOpenedAsk(_:)``).
  var distinct: Int { seen.count }

  /// Counts `cep`, the CEP of a row whose answer opened an ask: only such rows can bring a CEP
  /// not counted yet (a row answered by the memo, or waiting for an ask already open, has a
  /// CEP seen before), so the set is not touched on the other rows.
  func noteOpenedAsk(_ cep: Int) { seen.insert(cep) }

  private var reader = CSVReader(keepRawBytes: true)
  private var done = false
  private let seen = CEPSet()
  /// The input's dialect (set by ``prepare(_:)``).
  private(set) var dialect = CSVDialect(
    delimiter: UInt8(ascii: ","), encoding: .utf8, outputEncoding: .utf8)
  /// Whether a CEP of 7 digits is invalid (`--strict-cep`) rather than read with a leading 0.
  var strictCEP = false

  init(input: InputFile) {
    self.input = input
  }

  /// Reads the input up to the end of its header line, and settles its dialect: the
  /// delimiter and encoding `options` give, or those the header line and the input show
  /// (``DialectDetection``). A regular file is scanned for its first non-ASCII byte; a pipe
  /// is judged by what was read for the header. An all-ASCII input is UTF-8.
  func prepare(_ options: DialectOptions) throws -> CSVDialect {
    var pending: [UInt8] = []
    func headerStart() -> Int {
      pending.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
    }
    while !done {
      if pending.count > headerStart(),
        DialectDetection.headerLineEnd(pending[headerStart()...]) != nil
      {
        break
      }
      if pending.count > DialectDetection.headerLimit { break }
      let chunk = try input.read()
      if chunk.isEmpty { done = true } else { pending += chunk }
    }
    let body = pending[headerStart()...]
    let delimiter = options.delimiter ?? DialectDetection.delimiter(ofHeader: body)
    var encoding = options.encoding
    var detected = false
    if encoding == nil {
      if headerStart() == 3 {
        encoding = .utf8
      } else if let size = input.size {
        encoding = DialectDetection.encoding(ofFile: input.fd, size: size)
      } else {
        encoding = DialectDetection.encoding(ofSample: body, complete: done)
      }
      detected = encoding == .windows1252
    }
    let inputEncoding = encoding ?? .utf8
    dialect = CSVDialect(
      delimiter: delimiter, encoding: inputEncoding,
      outputEncoding: options.outputEncoding ?? inputEncoding, detectedWindows1252: detected)
    strictCEP = options.strictCEP
    reader = makeReader()
    reader.append(pending)
    if done { reader.finish() }
    return dialect
  }

  private func makeReader() -> CSVReader {
    CSVReader(separator: dialect.delimiter, keepRawBytes: true, encoding: dialect.encoding)
  }

  /// Whether the input began with a UTF-8 byte order mark.
  var sawByteOrderMark: Bool { reader.sawByteOrderMark }

  /// The next record, reading more input as needed; `nil` at the end.
  func nextRecord() throws -> CSVRecord? {
    while true {
      if let record = try reader.next() {
        bytesRead += record.rawBytes.count + record.terminator.count
        return record
      }
      if done { return nil }
      let chunk = try input.read()
      if chunk.isEmpty {
        reader.finish()
        done = true
      } else {
        reader.append(chunk)
      }
    }
  }

  /// The next data row; `nil` at the end.
  ///
  /// - Throws: `CSVError` for a malformed record, or the read's error; reading stops there.
  func nextRow() throws -> EnrichRow? {
    let record: CSVRecord?
    do {
      record = try nextRecord()
    } catch {
      // What was buffered is of no more use.
      reader = makeReader()
      done = true
      throw error
    }
    guard let record else { return nil }
    if record.rawBytes.isEmpty && record.isBlank {
      return EnrichRow(
        bytes: [], terminator: record.terminator, line: record.line, cep: nil, isBlank: true)
    }
    let field = column < record.fields.count ? record.fields[column] : ""
    var cep = cepNumber(ofField: field)
    var padded = false
    if cep == nil, !strictCEP, let number = paddedCEPNumber(ofField: field) {
      cep = number
      padded = true
    }
    return EnrichRow(
      bytes: record.rawBytes, terminator: record.terminator, line: record.line, cep: cep,
      padded: padded, isBlank: false)
  }
}

/// The rows a synchronous reader gives (`pull`: the next row, `nil` at the end), as the
/// async sequence the `lookups` stream reads: `batch`'s lines and `enrich`'s records. Each
/// row is pulled on the caller's actor (`next(isolation:)`), with no executor hop.
struct PulledRows<Element: Sendable>: AsyncSequence, Sendable, ReadInline {
  let pull: @Sendable () throws -> Element?

  init(_ pull: @escaping @Sendable () throws -> Element?) { self.pull = pull }

  func makeAsyncIterator() -> Iterator { Iterator(pull: pull) }

  struct Iterator: AsyncIteratorProtocol {
    let pull: @Sendable () throws -> Element?

    mutating func next() async throws -> Element? { try pull() }

    mutating func next(isolation actor: isolated (any Actor)?) async throws -> Element? {
      try pull()
    }
  }
}

/// A set of CEP numbers: one bit for each of the 100,000,000 possible CEPs, in zeroed memory
/// the system hands out a page at a time when first written (a page covers 32,768
/// consecutive CEPs), so an empty set costs nothing and a full one 12.5 MB at most. A
/// reference type: one owner, never copied.
final class CEPSet {
  private static let words = 100_000_000 / 64 + 1
  private let bits: UnsafeMutablePointer<UInt64>
  /// How many members.
  private(set) var count = 0

  init() {
    // calloc, not a Swift array: an array would write every zero and make all 12.5 MB
    // resident at once.
    guard let memory = calloc(Self.words, MemoryLayout<UInt64>.stride) else {
      fatalError("cannot reserve 12.5 MB of address space for the CEP set")
    }
    bits = memory.bindMemory(to: UInt64.self, capacity: Self.words)
  }

  deinit { free(bits) }

  /// Whether `cep` (0 to 99,999,999) is a member.
  func contains(_ cep: Int) -> Bool {
    guard count > 0, cep >= 0, cep < 100_000_000 else { return false }
    return bits[cep >> 6] & (1 << UInt64(cep & 63)) != 0
  }

  /// Adds `cep` (0 to 99,999,999; anything else is ignored); `false` when it was already a
  /// member.
  @discardableResult
  func insert(_ cep: Int) -> Bool {
    guard cep >= 0, cep < 100_000_000 else { return false }
    let mask: UInt64 = 1 << UInt64(cep & 63)
    guard bits[cep >> 6] & mask == 0 else { return false }
    bits[cep >> 6] |= mask
    count += 1
    return true
  }
}
