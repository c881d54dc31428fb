import CepisSupport

// Fuzz target: the `enrich` input path. `cepis enrich` copies every input record through as
// its raw bytes and terminator, so for any input the reader accepts, re-joining those pieces
// (with the BOM it skipped) must give back the input byte for byte: no row lost, split or
// altered. Inputs it rejects must be rejected with a CSVError, never a crash. The input's
// first byte picks the dialect the reader is given, as `enrich` would detect or be told it:
// `,` or `;` or tab, UTF-8 or Windows-1252. A Windows-1252 field decodes to exactly its bytes
// (one character each), and a field is refused only for one of the five undefined bytes.
@testable import Cepis

/// libFuzzer's entry point: one input per call; a trap is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let input = Array(UnsafeBufferPointer(start: data, count: size))
  let choice = input.first ?? 0
  let separator: UInt8 = [UInt8(ascii: ","), UInt8(ascii: ";"), 9][Int(choice % 3)]
  let encoding: CSVEncoding = choice & 4 == 0 ? .utf8 : .windows1252
  var reader = CSVReader(
    separator: separator, keepRawBytes: true, maxRecordBytes: 1 << 16, encoding: encoding)
  // Feed in small chunks, as the tool does with 64 KiB reads, to exercise record boundaries.
  var rebuilt: [UInt8] = []
  var offset = 0
  func check(_ record: CSVRecord) {
    rebuilt += record.rawBytes + record.terminator
    guard encoding == .windows1252 else { return }
    for field in record.fields {
      precondition(
        field.unicodeScalars.allSatisfy { Windows1252.byte(for: $0) != nil },
        "a Windows-1252 field decoded to a character outside Windows-1252")
    }
  }
  do {
    while offset < input.count {
      let end = min(input.count, offset + 7)
      reader.append(input[offset..<end])
      offset = end
      while let record = try reader.next() { check(record) }
    }
    reader.finish()
    while let record = try reader.next() { check(record) }
  } catch let error as CSVError {
    if encoding == .windows1252, case .undefinedInWindows1252(let byte) = error.reason {
      precondition(!Windows1252.isDefined(byte), "a defined byte was refused")
      precondition(input.contains(byte), "the refused byte is not in the input")
    }
    return 0
  } catch {
    fatalError("unexpected error type \(error)")
  }
  if encoding == .windows1252 {
    precondition(input.allSatisfy(Windows1252.isDefined), "an undefined byte was accepted")
  }
  let bom: [UInt8] = reader.sawByteOrderMark ? [0xEF, 0xBB, 0xBF] : []
  precondition(bom + rebuilt == input, "enrich would not copy the input through unchanged")
  return 0
}
