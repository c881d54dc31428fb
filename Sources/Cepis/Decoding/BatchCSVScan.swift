// Byte scanners over a CSV body, for the packed batch decoder (`BatchRowDecoder.swift`),
// `CSVReader` and the SQLite store: a record's field spans, and a UTF-8 check. They read
// through `UnsafeBufferPointer`s, whose subscripts are unchecked in release builds; each read
// states next to it why its index is in bounds. The caller keeps the bytes alive for the call.

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
    // `start..<end` lies in `bytes` (a span the scanner noted there); a doubled quote's two
    // bytes are both inside it, so a step of 2 lands at `end` at most.
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
    // Every read of `bytes` below is at an index first compared with `end` (its count).
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
  // Reads through `base`, unchecked: each is at an index below `count`, as the guard before
  // it tests (a word's 8 or 16 bytes, a lead byte, a continuation at `index + offset`).
  let count = bytes.count
  let high: UInt64 = 0x8080_8080_8080_8080
  var index = 0
  while index < count {
    if index + 16 <= count {
      // Two words at a time while the text is ASCII (`index + 16 <= count`).
      let first = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
      let second = UnsafeRawPointer(base + index + 8).loadUnaligned(as: UInt64.self)
      if (first | second) & high == 0 {
        index += 16
        continue
      }
    }
    if index + 8 <= count {
      // A word inside the bytes; the jump below stays inside it (at most 7 bytes on).
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
    // `index < count`: the loop's condition, and a jump stays inside its word.
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
