import CepisSupport

/// An error in CSV input, with the 1-based line where the bad record starts.
package struct CSVError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What is wrong.
  package enum Reason: Sendable, Equatable {
    /// A quoted field was still open when the input ended.
    case unterminatedQuote
    /// A closing quote was followed by something other than a separator or a line end.
    case characterAfterClosingQuote
    /// A field is not valid UTF-8.
    case invalidUTF8
    /// A field of a Windows-1252 input holds one of the five bytes that are no character
    /// there (0x81, 0x8D, 0x8F, 0x90, 0x9D): the file is in neither encoding.
    case undefinedInWindows1252(byte: UInt8)
    /// A record is longer than the reader's `maxRecordBytes`.
    case recordTooLong(limit: Int)
  }

  /// What is wrong.
  package var reason: Reason
  /// The line, counting from 1, on which the offending record starts.
  package var line: Int

  /// Creates an error.
  package init(reason: Reason, line: Int) {
    self.reason = reason
    self.line = line
  }

  /// A readable explanation, for logs and the command line.
  package var description: String {
    switch reason {
    case .unterminatedQuote: return "CSV line \(line): quoted field never closed"
    case .characterAfterClosingQuote:
      return "CSV line \(line): unexpected character after a closing quote"
    case .invalidUTF8: return "CSV line \(line): field is not valid UTF-8"
    case .undefinedInWindows1252(let byte):
      let hex = String(byte, radix: 16, uppercase: true)
      return "CSV line \(line): byte 0x\(hex) is a character neither in UTF-8 nor in Windows-1252"
    case .recordTooLong(let limit): return "CSV line \(line): record longer than \(limit) bytes"
    }
  }
}

/// The text encoding of a CSV input.
package enum CSVEncoding: Sendable, Equatable {
  /// UTF-8, with or without a byte order mark.
  case utf8
  /// Windows-1252 (read for Latin-1 too): one byte per character.
  case windows1252
}

/// One CSV record: its fields, decoded, and — when asked for — its exact bytes.
package struct CSVRecord: Sendable, Equatable {
  /// The fields, unquoted and unescaped.
  package var fields: [String]
  /// The record's bytes exactly as they were in the input, without the line terminator;
  /// empty unless the reader was created with `keepRawBytes: true`.
  package var rawBytes: [UInt8]
  /// The line terminator that ended the record: `"\n"`, `"\r\n"`, `"\r"`, or empty at the
  /// end of input.
  package var terminator: [UInt8]
  /// The 1-based line on which the record starts.
  package var line: Int

  /// Creates a record.
  package init(fields: [String], rawBytes: [UInt8] = [], terminator: [UInt8] = [], line: Int = 1) {
    self.fields = fields
    self.rawBytes = rawBytes
    self.terminator = terminator
    self.line = line
  }

  /// Whether the record is an empty line (a single empty field and no bytes).
  package var isBlank: Bool { fields.count == 1 && fields[0].isEmpty }
}

/// An incremental RFC 4180 reader: feed it bytes as they arrive, take records out as they
/// complete.
///
/// Quoted fields may hold separators, doubled quotes and line breaks; lines may end in LF,
/// CRLF or CR; a UTF-8 byte-order mark at the very start is skipped (and remembered in
/// ``sawByteOrderMark``). Memory is bounded by the longest record, not by the input.
///
/// ```swift
/// var reader = CSVReader()
/// reader.append(Array("cep,uf\n01001000,SP\n".utf8))
/// reader.finish()
/// while let record = try reader.next() { print(record.fields) }
/// ```
package struct CSVReader: Sendable {
  private static let quote = UInt8(ascii: "\"")
  private static let lineFeed = UInt8(ascii: "\n")
  private static let carriageReturn = UInt8(ascii: "\r")

  /// The field separator byte (`,` unless set otherwise).
  package let separator: UInt8
  /// Whether records carry their exact input bytes in ``CSVRecord/rawBytes``.
  package let keepRawBytes: Bool
  /// The largest record accepted, so that hostile input cannot exhaust memory.
  package let maxRecordBytes: Int
  /// Whether the input began with a UTF-8 byte-order mark (which is not part of any field).
  package private(set) var sawByteOrderMark = false
  /// When set, records from here on decode only this field (0-based) into a `String`; every
  /// other field is scanned and checked exactly as before (malformed CSV and invalid UTF-8
  /// are refused the same) but given as `""`. For tools that copy each record's raw bytes and
  /// read one column — `cepis enrich` — so that a wide file costs no string per cell.
  package var onlyField: Int?
  /// How fields are decoded: UTF-8 (the default) or Windows-1252. Separators, quotes and line
  /// ends are the same bytes in both, so only a field's non-ASCII bytes are read differently.
  package let encoding: CSVEncoding

  private var buffer: [UInt8] = []
  private var position = 0
  private var atEnd = false
  private var checkedByteOrderMark = false
  private var line = 1
  private var scratch: [UInt8] = []
  private var lastFieldCount = 8

  /// Creates a reader.
  ///
  /// - Parameters:
  ///   - separator: the field separator, `,` by default.
  ///   - keepRawBytes: keep each record's exact bytes, for tools that must copy input
  ///     through unchanged.
  ///   - maxRecordBytes: the longest record accepted (16 MiB by default).
  ///   - encoding: how fields are decoded, UTF-8 by default.
  package init(
    separator: UInt8 = UInt8(ascii: ","), keepRawBytes: Bool = false,
    maxRecordBytes: Int = 16 << 20, encoding: CSVEncoding = .utf8
  ) {
    self.separator = separator
    self.encoding = encoding
    self.keepRawBytes = keepRawBytes
    self.maxRecordBytes = maxRecordBytes
  }

  /// Reads all of `bytes` at once and returns every record.
  package static func records(
    in bytes: some Collection<UInt8>, separator: UInt8 = UInt8(ascii: ",")
  ) throws -> [CSVRecord] {
    var reader = CSVReader(separator: separator)
    reader.append(bytes)
    reader.finish()
    var result: [CSVRecord] = []
    while let record = try reader.next() { result.append(record) }
    return result
  }

  /// Adds input bytes.
  package mutating func append(_ bytes: some Collection<UInt8>) {
    if position > 0 && position >= buffer.count / 2 {
      buffer.removeSubrange(0..<position)
      position = 0
    }
    buffer.append(contentsOf: bytes)
  }

  /// Declares that no more input will come, so a final record without a line end counts.
  package mutating func finish() {
    atEnd = true
  }

  /// The next complete record, or `nil` when more input is needed (or, after ``finish()``,
  /// when the input is exhausted).
  package mutating func next() throws -> CSVRecord? {
    if !checkedByteOrderMark {
      if buffer.count - position < 3 && !atEnd { return nil }
      checkedByteOrderMark = true
      if buffer.count - position >= 3, buffer[position] == 0xEF, buffer[position + 1] == 0xBB,
        buffer[position + 2] == 0xBF
      {
        sawByteOrderMark = true
        position += 3
      }
    }
    guard position < buffer.count else { return nil }
    guard let (record, next) = try scanRecord(from: position) else {
      if buffer.count - position > maxRecordBytes {
        throw CSVError(reason: .recordTooLong(limit: maxRecordBytes), line: line)
      }
      return nil
    }
    position = next
    return record
  }

  // Scans one record starting at `start`; `nil` means the record is not complete yet.
  private mutating func scanRecord(from start: Int) throws -> (CSVRecord, Int)? {
    // The scratch buffer is moved out for the scan so the input buffer can be borrowed
    // unsafely at the same time (no exclusivity conflict, no copy).
    var scratch: [UInt8] = []
    swap(&scratch, &self.scratch)
    defer { swap(&scratch, &self.scratch) }
    let separator = self.separator
    let atEnd = self.atEnd
    let capacity = lastFieldCount
    let only = onlyField
    let windows1252 = encoding == .windows1252
    let outcome: Scanned?
    do {
      outcome = try buffer.withUnsafeBufferPointer { bytes in
        try Self.scan(
          bytes, from: start, separator: separator, atEnd: atEnd, scratch: &scratch,
          fieldCapacity: capacity, only: only, windows1252: windows1252)
      }
    } catch let failure as ScanFailure {
      throw CSVError(reason: failure.reason, line: line)
    }
    guard let outcome else { return nil }
    let startLine = line
    line += outcome.newlines + 1
    lastFieldCount = outcome.fields.count
    let terminator: [UInt8]
    switch outcome.terminatorLength {
    case 2: terminator = Self.crlf
    case 1: terminator = buffer[outcome.recordEnd] == Self.lineFeed ? Self.lf : Self.cr
    default: terminator = []
    }
    let raw = keepRawBytes ? Array(buffer[start..<outcome.recordEnd]) : []
    return (
      CSVRecord(fields: outcome.fields, rawBytes: raw, terminator: terminator, line: startLine),
      outcome.recordEnd + outcome.terminatorLength
    )
  }

  // Shared, so that a record's terminator costs no allocation.
  private static let crlf: [UInt8] = [13, 10]
  private static let lf: [UInt8] = [10]
  private static let cr: [UInt8] = [13]

  private struct ScanFailure: Error {
    var reason: CSVError.Reason
  }

  private struct Scanned {
    var fields: [String]
    var recordEnd: Int
    var terminatorLength: Int
    var newlines: Int
  }

  // The scanner proper, over raw bytes: one pass per field, noting on the way whether the
  // field is pure ASCII so that decoding needs no second look at it.
  private static func scan(
    _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, separator: UInt8, atEnd: Bool,
    scratch: inout [UInt8], fieldCapacity: Int, only: Int?, windows1252: Bool
  ) throws -> Scanned? {
    // A field `only` leaves out is checked, not decoded.
    func field(_ bytes: UnsafeBufferPointer<UInt8>, isASCII: Bool, at column: Int) throws -> String
    {
      if !isASCII && windows1252 {
        if let byte = Windows1252.firstUndefined(in: bytes) {
          throw ScanFailure(reason: .undefinedInWindows1252(byte: byte))
        }
        guard let only, column != only else { return Windows1252.decode(bytes) ?? "" }
        return ""
      }
      guard let only, column != only else { return try decode(bytes, isASCII: isASCII) }
      guard isASCII || isValidUTF8(bytes) else { throw ScanFailure(reason: .invalidUTF8) }
      return ""
    }
    var fields: [String] = []
    fields.reserveCapacity(fieldCapacity)
    var index = start
    let end = bytes.count
    var newlines = 0
    while true {
      if index < end && bytes[index] == quote {
        scratch.removeAll(keepingCapacity: true)
        var cursor = index + 1
        var high: UInt8 = 0
        while true {
          guard cursor < end else {
            if atEnd { throw ScanFailure(reason: .unterminatedQuote) }
            return nil
          }
          let byte = bytes[cursor]
          if byte == quote {
            if cursor + 1 < end {
              if bytes[cursor + 1] == quote {
                scratch.append(quote)
                cursor += 2
                continue
              }
              break
            }
            if atEnd { break }
            return nil
          }
          if byte == lineFeed
            || (byte == carriageReturn && (cursor + 1 >= end || bytes[cursor + 1] != lineFeed))
          {
            newlines += 1
          }
          high |= byte
          scratch.append(byte)
          cursor += 1
        }
        let column = fields.count
        fields.append(
          try scratch.withUnsafeBufferPointer {
            try field($0, isASCII: high < 0x80, at: column)
          })
        index = cursor + 1
        if index < end {
          let byte = bytes[index]
          if byte == separator {
            index += 1
            continue
          }
          if byte != lineFeed && byte != carriageReturn {
            throw ScanFailure(reason: .characterAfterClosingQuote)
          }
        } else if !atEnd {
          return nil
        }
      } else {
        var cursor = index
        var high: UInt8 = 0
        while cursor < end {
          let byte = bytes[cursor]
          if byte == separator || byte == lineFeed || byte == carriageReturn { break }
          high |= byte
          cursor += 1
        }
        if cursor >= end && !atEnd { return nil }
        fields.append(
          try field(
            UnsafeBufferPointer(rebasing: bytes[index..<cursor]), isASCII: high < 0x80,
            at: fields.count))
        index = cursor
        if index < end && bytes[index] == separator {
          index += 1
          if index >= end {
            if !atEnd { return nil }
            fields.append("")
          } else {
            continue
          }
        }
      }
      // At a line end or the end of input.
      var terminatorLength = 0
      if index < end {
        if bytes[index] == carriageReturn {
          if index + 1 < end {
            terminatorLength = bytes[index + 1] == lineFeed ? 2 : 1
          } else if atEnd {
            terminatorLength = 1
          } else {
            return nil
          }
        } else if bytes[index] == lineFeed {
          terminatorLength = 1
        }
      }
      return Scanned(
        fields: fields, recordEnd: index, terminatorLength: terminatorLength, newlines: newlines)
    }
  }

  private static func decode(_ bytes: UnsafeBufferPointer<UInt8>, isASCII: Bool) throws -> String {
    if isASCII { return String(decoding: bytes, as: UTF8.self) }
    // `String(decoding:)` is specialised for these bytes; `String(validating:)` is generic and
    // costs a metadata lookup per field on Linux (a large part of a bulk run's profile). Invalid
    // sequences decode to U+FFFD (EF BF BD): no EF byte in the result and an unchanged length
    // prove there were none; otherwise compare the bytes back, which catches them exactly.
    let text = String(decoding: bytes, as: UTF8.self)
    let utf8 = text.utf8
    if utf8.count == bytes.count && !utf8.contains(0xEF) { return text }
    if !utf8.elementsEqual(bytes) {
      throw ScanFailure(reason: .invalidUTF8)
    }
    return text
  }
}
