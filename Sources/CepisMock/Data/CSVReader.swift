/// RFC 4180 CSV reading (LF or CRLF line endings).
enum CSVReader {
  static func records(_ text: String) -> [[String]] {
    var records: [[String]] = []
    var record: [String] = []
    var field: [UInt8] = []
    var quoted = false
    var bytes = Array(text.utf8)[...]
    func endField() {
      record.append(String(decoding: field, as: UTF8.self))
      field.removeAll(keepingCapacity: true)
    }
    while let byte = bytes.popFirst() {
      if quoted {
        if byte == 34 {
          if bytes.first == 34 {
            field.append(34)
            bytes = bytes.dropFirst()
          } else {
            quoted = false
          }
        } else {
          field.append(byte)
        }
        continue
      }
      switch byte {
      case 34 where field.isEmpty: quoted = true
      case 44: endField()
      case 13 where bytes.first == 10: break
      case 10:
        endField()
        records.append(record)
        record = []
      default: field.append(byte)
      }
    }
    if !field.isEmpty || !record.isEmpty {
      endField()
      records.append(record)
    }
    return records
  }
}
