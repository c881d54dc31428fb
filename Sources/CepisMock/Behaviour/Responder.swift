import BrazilianDocuments
import CepisSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

let jsonType = "application/json; charset=utf-8"
let csvType = "text/csv; charset=utf-8"
let htmlType = "text/html; charset=utf-8"

/// Where a path leads.
enum Target: Equatable {
  case cep(String)
  case csv
  case health
  case cpf(String)
  case viaCEP(String)
  case brasilAPI(String)
  case control(String)
  case unknown

  var route: MockRoute? {
    switch self {
    case .cep: return .cep
    case .csv: return .csv
    case .health: return .health
    case .cpf: return .cpf
    case .viaCEP: return .viaCEP
    case .brasilAPI: return .brasilAPI
    case .control, .unknown: return nil
    }
  }
}

/// Path matching on the last one to three components, so any prefix (`/api/…`) works.
enum Router {
  static func route(_ path: String) -> Target {
    let components = path.split(separator: "/")
    guard let lastRaw = components.last else { return .unknown }
    let last = percentDecoded(lastRaw)
    let previous = components.count >= 2 ? percentDecoded(components[components.count - 2]) : nil
    let third = components.count >= 3 ? percentDecoded(components[components.count - 3]) : nil
    if previous == "__mock" { return .control(last) }
    // ViaCEP: …/ws/{cep}/json/ ; BrasilAPI: …/cep/v2/{cep}
    if last == "json", third == "ws", let previous { return .viaCEP(previous) }
    if previous == "v2", third == "cep" { return .brasilAPI(last) }
    if last == "health" { return .health }
    if last == "csv" { return .csv }
    if previous == "cpf" { return .cpf(last) }
    if last == "cpf" { return .cpf("") }
    if last.utf8.contains(where: { $0 >= 48 && $0 <= 57 }) { return .cep(last) }
    return .unknown
  }
}

/// A body to send: bytes, or generated padding (streamed), or an endless chunked stream.
enum ResponseBody {
  case bytes([UInt8])
  /// `prefix`, then `fill` repeated (cut to length), then `suffix`: exactly `total` bytes.
  case padded(prefix: [UInt8], fill: [UInt8], suffix: [UInt8], total: Int)
  case endlessChunked(prefix: [UInt8], fill: [UInt8])

  var length: Int {
    switch self {
    case .bytes(let bytes): return bytes.count
    case .padded(_, _, _, let total): return total
    case .endlessChunked: return 0
    }
  }

  /// Appends the bytes in `range` (for `.bytes` and `.padded`).
  func append(_ range: Range<Int>, to out: inout [UInt8]) {
    switch self {
    case .bytes(let bytes):
      out.append(contentsOf: bytes[range])
    case .padded(let prefix, let fill, let suffix, let total):
      let suffixStart = max(total - suffix.count, 0)
      let prefixEnd = min(prefix.count, suffixStart)
      for offset in range {
        if offset < prefixEnd {
          out.append(prefix[offset])
        } else if offset >= suffixStart {
          out.append(suffix[offset - (total - suffix.count)])
        } else {
          out.append(fill[(offset - prefixEnd) % fill.count])
        }
      }
    case .endlessChunked:
      break
    }
  }
}

/// An answer and how to deliver it.
struct Response {
  var status: Int
  var contentType: String
  var body: ResponseBody
  var headers: [(String, String)] = []
  var close = false
  var headOnly = false
  var delay: TimeInterval = 0
  var dribbleGap: TimeInterval?
  var truncate = false
  var resetBeforeHeaders = false
  var resetAfterHeaders = false

  init(status: Int, contentType: String, body: ResponseBody) {
    self.status = status
    self.contentType = contentType
    self.body = body
  }
}

/// `value` as compact JSON bytes (the package's one writer, `CepisSupport.JSONValue`).
func jsonObject(_ value: JSONValue) -> [UInt8] { value.bytes }

func addressJSON(_ address: MockAddress) -> [UInt8] {
  var pairs: [(String, JSONValue)] = [
    ("cep", .string(address.cep)), ("logradouro", .string(address.logradouro)),
    ("complemento", .string(address.complemento)), ("bairro", .string(address.bairro)),
    ("localidade", .string(address.localidade)), ("uf", .string(address.uf)),
    ("ibge", .string(address.ibge)),
  ]
  if let point = address.geo {
    pairs.append(
      (
        "geo",
        [
          "lat": .double(point.lat), "lon": .double(point.lon), "raio_m": .int(point.raioM),
          "precisao": .string(point.precisao),
        ]
      ))
  }
  var out: [UInt8] = []
  out.reserveCapacity(320)
  JSONValue.object(pairs).append(to: &out)
  return out
}

let reasonPhrases: [Int: String] = [
  200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
  405: "Method Not Allowed", 408: "Request Timeout", 413: "Content Too Large",
  429: "Too Many Requests", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
  501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
  504: "Gateway Timeout", 505: "HTTP Version Not Supported",
]

func reasonPhrase(_ status: Int) -> String { reasonPhrases[status] ?? "Status \(status)" }

extension ServerCore {
  private var dataset: MockDataset { configuration.dataset }

  private func json(_ status: Int, _ body: [UInt8]) -> Response {
    Response(status: status, contentType: jsonType, body: .bytes(body))
  }

  private func message(_ status: Int, _ text: String) -> Response {
    json(status, jsonObject(["mensagem": .string(text)]))
  }

  private func cpfError(_ status: Int, _ text: String) -> Response {
    json(status, jsonObject(["success": .bool(false), "error": .string(text)]))
  }

  /// The normal answer (before faults other than the CSV ones).
  func answer(
    _ request: MockHTTPRequest, target: Target, faults: [MockFault], degraded: Bool
  ) -> Response {
    if case .control(let name) = target { return control(name, request: request) }
    guard target != .unknown else { return message(404, "Rota não encontrada") }
    guard request.method == "GET" || request.method == "HEAD" else {
      var response = message(405, "Método não permitido")
      response.headers.append(("Allow", "GET, HEAD"))
      return response
    }
    switch target {
    case .cep(let text):
      guard let value = cepValue(text) else { return message(400, "CEP inválido: \(text)") }
      guard let address = dataset.address(forValue: value) else {
        return message(404, "CEP não encontrado")
      }
      return json(200, addressJSON(address))
    case .csv:
      return csv(request, faults: Set(faults.filter(\.isCSVOnly)))
    case .health:
      return json(
        degraded ? 503 : 200,
        jsonObject([
          "ok": .bool(!degraded), "status": .string(degraded ? "degraded" : "ok"),
          "dne": .string(state.withLock { $0.edition }), "ceps": .int(datasetCount),
          "base_gerada_em": .string("2026-11-15T03:00:00Z"),
        ]))
    case .cpf(let cpf):
      guard let key = request.headers["x-api-key"], configuration.cpfAPIKeys.contains(key) else {
        return cpfError(401, "Unauthorized")
      }
      guard isValidCPF(cpf) else { return cpfError(400, "CPF inválido") }
      guard let person = dataset.person(for: cpf) else {
        return cpfError(404, "CPF não encontrado")
      }
      return json(
        200,
        jsonObject([
          "success": .bool(true),
          "data": [
            "cpf": .string(person.cpf), "name": .string(person.name),
            "nameUpper": .string(person.nameUpper), "gender": .string(person.gender),
            "birthDate": .string(person.birthDate), "day": .int(person.day),
            "month": .int(person.month), "year": .int(person.year),
          ],
        ]))
    case .viaCEP(let text):
      return viaCEPAnswer(text, booleanErro: faults.contains(.viaCEPBooleanErro))
    case .brasilAPI(let text):
      return brasilAPIAnswer(text)
    case .control, .unknown:
      return message(404, "Rota não encontrada")
    }
  }

  // MARK: CSV

  static let csvColumns = [
    "cep", "logradouro", "complemento", "bairro", "localidade", "uf", "ibge",
  ]
  /// The column order of ``MockFault/csvColumnsShuffled``.
  static let shuffledColumns = [6, 0, 4, 1, 5, 3, 2]

  private func csv(_ request: MockHTTPRequest, faults: Set<MockFault>) -> Response {
    // See `MockServer.Configuration.keptCSVAnswerBytes`.
    let budget = configuration.keptCSVAnswerBytes
    guard budget > 0, faults.isEmpty, let query = request.query else {
      return builtCSV(request, faults: faults)
    }
    if let kept = keptCSVAnswers.withLock({ $0.answers[query] }) {
      return Response(status: 200, contentType: csvType, body: .bytes(kept))
    }
    let response = builtCSV(request, faults: faults)
    if response.status == 200, case .bytes(let body) = response.body {
      keptCSVAnswers.withLock { kept in
        guard kept.bytes + body.count <= budget, kept.answers[query] == nil else { return }
        kept.answers[query] = body
        kept.bytes += body.count
      }
    }
    return response
  }

  private func builtCSV(_ request: MockHTTPRequest, faults: Set<MockFault>) -> Response {
    let items = queryDictionary(request.query)
    guard var list = items["ceps"], !list.isEmpty else {
      return message(400, "Parâmetro ceps ausente")
    }
    switch list.withUTF8({ parseCEPList($0, limit: 500) }) {
    case .values(let values):
      return Response(status: 200, contentType: csvType, body: .bytes(csvBody(values, faults)))
    case .invalid(let text):
      return message(400, "CEP inválido: \(text)")
    case .tooMany:
      return message(400, "Máximo de 500 CEPs por consulta")
    }
  }

  func csvBody(_ requested: [Int], _ faults: Set<MockFault>) -> [UInt8] {
    var rows = requested
    if faults.contains(.csvOmitMissing) { rows.removeAll { !dataset.exists($0) } }
    if faults.contains(.csvExtraRows) {
      let asked = Set(requested)
      let extras = dataset.orderedCEPs.lazy.filter { !asked.contains($0) }.prefix(3)
      for (index, extra) in extras.enumerated() {
        rows.insert(extra, at: index == 0 ? min(1, rows.count) : rows.count)
      }
    }
    if faults.contains(.csvReordered) && rows.count > 1 {
      var generator = SplitMix64(state: UInt64(rows.count) &* 0x5DEE_CE66)
      let original = rows
      rows.shuffle(using: &generator)
      if rows == original { rows.reverse() }
    }
    if faults.contains(.csvDuplicatedRows) { rows = rows.flatMap { [$0, $0] } }
    let masked = faults.contains(.csvMaskedCEPs)
    let columns = faults.contains(.csvColumnsShuffled) ? Self.shuffledColumns : Array(0..<7)
    let lineEnd: [UInt8] = faults.contains(.csvCRLF) ? [13, 10] : [10]

    var out: [UInt8] = []
    out.reserveCapacity(64 + rows.count * 96)
    if faults.contains(.csvBOM) { out.append(contentsOf: [0xEF, 0xBB, 0xBF]) }
    CSVField.appendRow(columns.map { Self.csvColumns[$0] }, to: &out)
    out.append(contentsOf: lineEnd)
    let fastPath = !masked && columns == Array(0..<7)
    for value in rows {
      if fastPath {
        if let row = dataset.csvRows[value] {
          out.append(contentsOf: row)
        } else if dataset.isSynthetic(value) {
          SyntheticAddress.appendCSVRow(value, cepMasked: false, to: &out)
        } else {
          appendCEP(value, masked: false, to: &out)
          out.append(contentsOf: ",,,,,,".utf8)
        }
      } else {
        var fields =
          dataset.address(forValue: value)?.csvFields
          ?? [cepString(value), "", "", "", "", "", ""]
        if masked { fields[0] = maskedCEP(fields[0]) }
        CSVField.appendRow(columns.map { fields[$0] }, to: &out)
      }
      out.append(contentsOf: lineEnd)
    }
    return out
  }

  // MARK: Faults

  func apply(_ fault: MockFault, to response: inout Response, route: MockRoute?) {
    let isCPF = route == .cpf
    switch fault {
    case .status(let code, let retryAfter, let body):
      response.status = code
      if let body {
        let trimmed = body.drop { $0 == " " || $0 == "\n" }
        let isJSON = trimmed.hasPrefix("{") || trimmed.hasPrefix("[")
        response.contentType = isJSON ? jsonType : "text/plain; charset=utf-8"
        response.body = .bytes(Array(body.utf8))
      } else {
        response.contentType = jsonType
        let text = "Erro simulado: \(code) \(reasonPhrase(code))"
        response.body = .bytes(
          isCPF
            ? jsonObject(["success": .bool(false), "error": .string(text)])
            : jsonObject(["mensagem": .string(text)]))
      }
      response.headers.removeAll { $0.0 == "Allow" }
      if let retryAfter { response.headers.append(("Retry-After", retryAfter)) }
    case .redirect(let status, let location):
      response.status = status
      response.contentType = "text/plain; charset=utf-8"
      response.body = .bytes([])
      response.headers.removeAll { $0.0 == "Allow" }
      response.headers.append(("Location", location))
    case .delayHeaders(let seconds):
      response.delay += max(0, seconds)
    case .dribble(let gap):
      response.dribbleGap = max(0, gap)
    case .truncatedBody:
      response.truncate = true
      response.close = true
    case .resetBeforeHeaders:
      response.resetBeforeHeaders = true
    case .resetAfterHeaders:
      response.resetAfterHeaders = true
    case .htmlPortal:
      response.status = 200
      response.contentType = htmlType
      response.body = .bytes(Array(Self.portalHTML.utf8))
    case .wrongShapeJSON:
      response.status = 200
      response.contentType = jsonType
      response.body = .bytes(Array(#"{"results":[],"error":null}"#.utf8))
    case .oversizedBody(let bytes):
      let total = max(0, bytes)
      response.status = 200
      if route == .csv {
        response.contentType = csvType
        response.body = .padded(
          prefix: Array("cep,logradouro,complemento,bairro,localidade,uf,ibge\n".utf8),
          fill: Array("99999999,Rua Preenchimento,,Bairro,Cidade,SP,3550308\n".utf8),
          suffix: [], total: total)
      } else {
        response.contentType = jsonType
        response.body = .padded(
          prefix: Array(#"{"padding":""#.utf8), fill: Array("abcdefghij".utf8),
          suffix: Array(#""}"#.utf8), total: total)
      }
    case .endlessChunked:
      response.status = 200
      response.close = true
      response.body =
        route == .csv
        ? .endlessChunked(
          prefix: Array("cep,logradouro,complemento,bairro,localidade,uf,ibge\n".utf8),
          fill: Array("99999999,Rua Sem Fim,,Bairro,Cidade,SP,3550308\n".utf8))
        : .endlessChunked(prefix: Array(#"{"padding":""#.utf8), fill: Array("abcdefghij".utf8))
      if route != .csv { response.contentType = jsonType }
    case .giantHeaders(let bytes):
      response.headers.append(("X-Mock-Padding", String(repeating: "a", count: max(0, bytes))))
    case .invalidUTF8:
      response.status = 200
      if route == .csv {
        response.contentType = csvType
        response.body = .bytes(
          Array("cep,logradouro,complemento,bairro,localidade,uf,ibge\n01001000,Pra".utf8)
            + [0xC3, 0x28, 0xFF, 0xFE] + Array(",,S\u{E9},S\u{E3}o Paulo,SP,3550308\n".utf8))
      } else {
        response.contentType = jsonType
        response.body = .bytes(
          Array(#"{"cep":"01001000","logradouro":"Pra"#.utf8) + [0xC3, 0x28, 0xFF, 0xFE]
            + Array(#"a da S","uf":"SP"}"#.utf8))
      }
    case .successFalse:
      response.status = 200
      response.contentType = jsonType
      response.body = .bytes(
        jsonObject([
          "success": .bool(false), "error": .string("Limite de consultas excedido (simulado)"),
        ]))
    case .brasilAPIOutage:
      response.status = 404
      response.contentType = jsonType
      response.body = .bytes(Providers.brasilAPIOutageBody)
    case .brasilAPIInvalidJSON:
      response.status = 500
      response.contentType = jsonType
      response.body = .bytes(Providers.brasilAPIInvalidJSONBody)
    case .csvBOM, .csvReordered, .csvOmitMissing, .csvDuplicatedRows, .csvMaskedCEPs,
      .csvColumnsShuffled, .csvExtraRows, .csvCRLF, .viaCEPBooleanErro, .normal:
      break
    }
  }

  static let portalHTML = """
    <!DOCTYPE html>
    <html><head><meta charset="utf-8"><title>Wi-Fi Grátis - Login</title></head>
    <body><h1>Bem-vindo ao Wi-Fi</h1><p>Faça login para continuar navegando.</p>
    <form method="post" action="/login"><input name="email"><button>Entrar</button></form>
    </body></html>

    """

  // MARK: Delivery

  func head(_ response: Response, contentLength: Int?) -> [UInt8] {
    var text = "HTTP/1.1 \(response.status) \(reasonPhrase(response.status))\r\n"
    text += "Content-Type: \(response.contentType)\r\n"
    if let contentLength {
      text += "Content-Length: \(contentLength)\r\n"
    } else {
      text += "Transfer-Encoding: chunked\r\n"
    }
    text += response.close ? "Connection: close\r\n" : "Connection: keep-alive\r\n"
    text += "Server: CepisMock\r\n"
    for (name, value) in response.headers { text += "\(name): \(value)\r\n" }
    text += "\r\n"
    return Array(text.utf8)
  }

  /// Sends the response, honouring its delivery faults. `.clientGone` when the client closed
  /// the connection before the response was completely written. `writing` is called once its
  /// delay, if any, is over, before its first byte is written.
  func deliver(
    _ response: Response, fd: Int32, wake: Int32, writing: () -> Void = {}
  ) -> ConnectionEnd {
    /// A wait in the middle of the answer; `nil` to go on.
    func wait(_ seconds: TimeInterval) -> ConnectionEnd? {
      switch pause(seconds, wake: wake, watching: fd) {
      case .elapsed: return nil
      case .stopped: return .close
      case .clientGone: return .clientGone
      }
    }
    if response.delay > 0, let end = wait(response.delay) { return end }
    writing()
    if response.resetBeforeHeaders { return .reset }
    let keep: ConnectionEnd = response.close ? .close : .keepAlive
    if case .endlessChunked(let prefix, let fill) = response.body {
      var headBytes = head(response, contentLength: nil)
      if response.headOnly { return Sockets.sendAll(fd, headBytes) ? keep : .clientGone }
      if response.resetAfterHeaders {
        _ = Sockets.sendAll(fd, headBytes)
        return .reset
      }
      headBytes += chunk(prefix)
      guard Sockets.sendAll(fd, headBytes) else { return .clientGone }
      return streamEndless(fill, fd: fd, wake: wake)
    }
    let total = response.body.length
    var out = head(response, contentLength: total)
    if response.headOnly { return Sockets.sendAll(fd, out) ? keep : .clientGone }
    if response.resetAfterHeaders {
      _ = Sockets.sendAll(fd, out)
      return .reset
    }
    let limit = response.truncate ? total / 2 : total
    var offset = 0
    if let gap = response.dribbleGap {
      guard Sockets.sendAll(fd, out) else { return .clientGone }
      out.removeAll(keepingCapacity: true)
      let dribbled = min(limit, configuration.maxDribbleBytes)
      while offset < dribbled {
        var byte: [UInt8] = []
        response.body.append(offset..<(offset + 1), to: &byte)
        guard Sockets.sendAll(fd, byte) else { return .clientGone }
        offset += 1
        if offset < limit, let end = wait(gap) { return end }
      }
    }
    // Send the rest in pieces of at most 64 KiB (the head travels with the first one).
    // Past the first MiB, pieces are paced to about 16 MB/s, as for the endless body: a
    // loopback flood would stall every other URLSession in the client's process on Linux.
    repeat {
      let end = min(limit, offset + 65_536)
      response.body.append(offset..<end, to: &out)
      guard Sockets.sendAll(fd, out) else { return .clientGone }
      out.removeAll(keepingCapacity: true)
      offset = end
      if offset > 1 << 20 && offset < limit && !pause(0.004, wake: wake) { return .close }
    } while offset < limit
    return response.truncate ? .close : keep
  }

  private func chunk(_ bytes: [UInt8]) -> [UInt8] {
    Array(String(bytes.count, radix: 16).utf8) + [13, 10] + bytes + [13, 10]
  }

  /// Sends chunks until the client goes (`.clientGone`), the server stops, 60 s pass or
  /// 2 GiB were sent (`.close`).
  private func streamEndless(_ fill: [UInt8], fd: Int32, wake: Int32) -> ConnectionEnd {
    var payload: [UInt8] = []
    while payload.count < 16_384 { payload += fill }
    let piece = chunk(payload)
    let deadline = Date().addingTimeInterval(60)
    var sent = 0
    while sent < 2_147_483_648 {
      guard Sockets.sendAll(fd, piece) else { return .clientGone }
      sent += piece.count
      // Paced to about 8 MB/s (a fast real link) rather than loopback speed: on Linux,
      // FoundationNetworking drives every URLSession in a process from one shared queue, and
      // a loopback flood would stall every other test's requests, not just this client's.
      var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
      if poll(&fds, 1, 2) > 0 { return .close }
      if Date() > deadline { return .close }
    }
    return .close
  }
}
