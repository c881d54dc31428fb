import Cepis
import CepisSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// How `enrich` and `batch` read a CSV file — its field delimiter and text encoding, given on
/// the command line or detected — and the encoding `enrich` writes its output in.
struct CSVDialect: Equatable {
  /// The field separator: `,`, `;` or tab.
  var delimiter: UInt8
  /// How the input's fields are decoded.
  var encoding: CSVEncoding
  /// The output's encoding: the input's, unless `--output-encoding utf-8` converts it.
  var outputEncoding: CSVEncoding
  /// Whether Windows-1252 was detected rather than given (worth one notice).
  var detectedWindows1252 = false

  /// Whether the input's bytes are converted to UTF-8 on the way out (not copied as they are).
  var transcodesInput: Bool { encoding == .windows1252 && outputEncoding == .utf8 }
}

/// What the command line says about the dialect and the CEPs: `--delimiter`, `--encoding`,
/// `--output-encoding`, `--strict-cep`. An option not given is detected.
struct DialectOptions {
  var delimiter: UInt8?
  var encoding: CSVEncoding?
  var outputEncoding: CSVEncoding?
  var strictCEP = false

  /// The options `enrich` and `batch` share.
  static let specs: [OptionSpec] = [
    .value(
      "delimiter", "SEP",
      "the field separator: ',', ';' or 'tab' (default: detected from the header line)"),
    .value(
      "encoding", "NAME",
      "utf-8, or windows-1252 (alias latin1, iso-8859-1) (default: detected)"),
    .flag("strict-cep", "a CEP of 7 digits is invalid (default: read with its lost leading 0)"),
  ]

  /// `enrich`'s own.
  static let outputSpec = OptionSpec.value(
    "output-encoding", "NAME",
    "utf-8 converts a Windows-1252 input's output to UTF-8 (default: the input's encoding)")

  init() {}

  init(_ context: Context) throws(UsageError) {
    let parsed = context.parsed
    if let text = parsed.value("delimiter") {
      switch text {
      case ",": delimiter = UInt8(ascii: ",")
      case ";": delimiter = UInt8(ascii: ";")
      case "tab", "\\t", "\t": delimiter = 9
      default:
        throw UsageError(
          message: "--delimiter takes ',', ';' or 'tab', not '\(text)'", path: context.path)
      }
    }
    if let text = parsed.value("encoding") {
      guard let named = Self.encoding(named: text) else {
        throw UsageError(
          message: "--encoding takes utf-8 or windows-1252, not '\(text)'", path: context.path)
      }
      encoding = named
    }
    if let text = parsed.value("output-encoding") {
      guard let named = Self.encoding(named: text) else {
        throw UsageError(
          message: "--output-encoding takes utf-8 or windows-1252, not '\(text)'",
          path: context.path)
      }
      outputEncoding = named
    }
    strictCEP = parsed.flag("strict-cep")
  }

  /// The encoding a name on the command line means; Latin-1 is read as Windows-1252.
  static func encoding(named name: String) -> CSVEncoding? {
    switch name.lowercased() {
    case "utf-8", "utf8": return .utf8
    case "windows-1252", "cp1252", "latin1", "latin-1", "iso-8859-1": return .windows1252
    default: return nil
    }
  }
}

/// Finding a file's dialect from its first bytes.
enum DialectDetection {
  /// The bytes looked at for a header line before giving up on finding its end.
  static let headerLimit = 1 << 20

  /// The index in `bytes` of the first CR or LF outside quotes: where the header line ends;
  /// `nil` when `bytes` holds none.
  static func headerLineEnd(_ bytes: ArraySlice<UInt8>) -> Int? {
    var quoted = false
    for index in bytes.indices {
      let byte = bytes[index]
      if byte == UInt8(ascii: "\"") {
        quoted.toggle()
      } else if !quoted && (byte == 10 || byte == 13) {
        return index
      }
    }
    return nil
  }

  /// The delimiter of a header line: whichever of `,`, `;` and tab it holds most often outside
  /// quotes (a tie goes to the first of those three); `,` when it holds none.
  static func delimiter(ofHeader bytes: ArraySlice<UInt8>) -> UInt8 {
    var commas = 0
    var semicolons = 0
    var tabs = 0
    var quoted = false
    for byte in bytes {
      switch byte {
      case UInt8(ascii: "\""): quoted.toggle()
      case UInt8(ascii: ",") where !quoted: commas += 1
      case UInt8(ascii: ";") where !quoted: semicolons += 1
      case 9 where !quoted: tabs += 1
      case 10 where !quoted, 13 where !quoted: return choose(commas, semicolons, tabs)
      default: break
      }
    }
    return choose(commas, semicolons, tabs)
  }

  private static func choose(_ commas: Int, _ semicolons: Int, _ tabs: Int) -> UInt8 {
    if semicolons > commas && semicolons >= tabs { return UInt8(ascii: ";") }
    if tabs > commas && tabs > semicolons { return 9 }
    return UInt8(ascii: ",")
  }

  /// The encoding a sample of the input shows, from its first non-ASCII byte on: UTF-8 when
  /// the rest of the sample is valid UTF-8, else Windows-1252; `nil` when the sample is all
  /// ASCII (which reads the same in both). `complete`: the sample ends where the input does
  /// (otherwise a character cut at its end is no evidence against UTF-8).
  static func encoding(ofSample sample: ArraySlice<UInt8>, complete: Bool) -> CSVEncoding? {
    guard let first = sample.firstIndex(where: { $0 >= 0x80 }) else { return nil }
    let rest = sample[first...]
    if isUTF8(rest) { return .utf8 }
    if !complete {
      for cut in 1...3 where rest.count > cut {
        if isUTF8(rest.dropLast(cut)) { return .utf8 }
      }
    }
    return .windows1252
  }

  private static func isUTF8(_ bytes: ArraySlice<UInt8>) -> Bool {
    String(decoding: bytes, as: UTF8.self).utf8.elementsEqual(bytes)
  }

  /// The index of the first byte of `buffer[..<count]` at or above 0x80, looked for eight
  /// bytes at a time: an all-ASCII file is scanned whole before its first row is read.
  private static func firstNonASCII(_ buffer: [UInt8], count: Int) -> Int? {
    buffer.withUnsafeBytes { raw in
      var index = 0
      while index + 8 <= count {
        if raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 {
          break
        }
        index += 8
      }
      while index < count {
        if raw[index] >= 0x80 { return index }
        index += 1
      }
      return nil
    }
  }

  /// ``encoding(ofSample:complete:)`` of a regular file read with `pread` (its offset is left
  /// alone): the file is scanned for its first non-ASCII byte, and the 64 KiB from there are
  /// the sample. `nil` when the file is all ASCII or cannot be read.
  static func encoding(ofFile fd: Int32, size: Int) -> CSVEncoding? {
    let block = 1 << 16
    var buffer = [UInt8](repeating: 0, count: block)
    var offset = 0
    while offset < size {
      let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, block, off_t(offset)) }
      guard count > 0 else { return nil }
      if let first = firstNonASCII(buffer, count: count) {
        let start = offset + first
        let sampleCount = buffer.withUnsafeMutableBytes {
          pread(fd, $0.baseAddress, block, off_t(start))
        }
        guard sampleCount > 0 else { return nil }
        return encoding(ofSample: buffer[..<sampleCount], complete: start + sampleCount >= size)
      }
      offset += count
    }
    return nil
  }
}

/// Finding the CEP column of a header.
enum CEPColumn {
  /// A column name as it is compared: without case, accents or spaces (`"CÉP "` → `"cep"`).
  static func fold(_ name: String) -> String {
    name.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
      .filter { !$0.isWhitespace && $0 != "\u{FEFF}" }
  }

  /// The index of the column `wanted` names (`cep` when `nil`): the column of exactly that
  /// name, else the one whose folded name matches.
  ///
  /// - Throws: ``UsageError`` when no column matches, or more than one does (listing them).
  static func find(
    in header: [String], named wanted: String?, file: String, path: [String]
  ) throws(UsageError) -> Int {
    if let wanted, let index = header.firstIndex(of: wanted) { return index }
    let folded = fold(wanted ?? "cep")
    let matches = header.indices.filter { fold(header[$0]) == folded }
    if matches.count == 1 { return matches[0] }
    if matches.count > 1 {
      let names = matches.map { "'\(header[$0])'" }.joined(separator: " and ")
      throw UsageError(
        message:
          "two columns of '\(file)' could be the CEP: \(names); name one with --column NAME",
        path: path)
    }
    let names = header.map { "'\($0)'" }.joined(separator: ", ")
    var message =
      "no column '\(wanted ?? "cep")' in the header of '\(file)' (columns: \(names))"
    if wanted == nil { message += "; name the CEP column with --column NAME" }
    throw UsageError(message: message, path: path)
  }
}

/// The CEP number of a field of exactly seven ASCII digits, spaces or tabs around them allowed
/// (`"1001000"` → `1001000`, the CEP 01001-000 whose leading zero a spreadsheet dropped);
/// `nil` for anything else. The library stays strict: only `enrich` and `batch` read these.
func paddedCEPNumber(ofField text: String) -> Int? {
  var value = 0
  var digits = 0
  var after = false
  for byte in text.utf8 {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"):
      guard !after, digits < 7 else { return nil }
      value = value * 10 + Int(byte - UInt8(ascii: "0"))
      digits += 1
    case UInt8(ascii: " "), 9:
      if digits > 0 { after = true }
    default:
      return nil
    }
  }
  return digits == 7 ? value : nil
}
