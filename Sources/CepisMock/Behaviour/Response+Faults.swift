import Foundation

extension Response {
  /// Applies one fault to this answer: a fault that replaces the status or body replaces this
  /// one's; delivery faults (delay, dribble, truncation, resets, giant headers) are recorded
  /// for ``MockConnection`` to carry out on the wire. CSV-only and provider faults are already
  /// in the body (``Responder``) and change nothing here.
  mutating func apply(_ fault: MockFault, route: MockRoute?) {
    let isCPF = route == .cpf
    switch fault {
    case .status(let code, let retryAfter, let body):
      status = code
      if let body {
        let trimmed = body.drop { $0 == " " || $0 == "\n" }
        let isJSON = trimmed.hasPrefix("{") || trimmed.hasPrefix("[")
        contentType = isJSON ? jsonType : "text/plain; charset=utf-8"
        self.body = .bytes(Array(body.utf8))
      } else {
        contentType = jsonType
        let text = "Erro simulado: \(code) \(reasonPhrase(code))"
        self.body = .bytes(
          isCPF
            ? jsonObject(["success": .bool(false), "error": .string(text)])
            : jsonObject(["mensagem": .string(text)]))
      }
      headers.removeAll { $0.0 == "Allow" }
      if let retryAfter { headers.append(("Retry-After", retryAfter)) }
    case .redirect(let status, let location):
      self.status = status
      contentType = "text/plain; charset=utf-8"
      body = .bytes([])
      headers.removeAll { $0.0 == "Allow" }
      headers.append(("Location", location))
    case .delayHeaders(let seconds):
      delay += max(0, seconds)
    case .dribble(let gap):
      dribbleGap = max(0, gap)
    case .truncatedBody:
      truncate = true
      close = true
    case .resetBeforeHeaders:
      resetBeforeHeaders = true
    case .resetAfterHeaders:
      resetAfterHeaders = true
    case .htmlPortal:
      status = 200
      contentType = htmlType
      body = .bytes(Array(Self.portalHTML.utf8))
    case .wrongShapeJSON:
      status = 200
      contentType = jsonType
      body = .bytes(Array(#"{"results":[],"error":null}"#.utf8))
    case .oversizedBody(let bytes):
      let total = max(0, bytes)
      status = 200
      if route == .csv {
        contentType = csvType
        body = .padded(
          prefix: Array("cep,logradouro,complemento,bairro,localidade,uf,ibge\n".utf8),
          fill: Array("99999999,Rua Preenchimento,,Bairro,Cidade,SP,3550308\n".utf8),
          suffix: [], total: total)
      } else {
        contentType = jsonType
        body = .padded(
          prefix: Array(#"{"padding":""#.utf8), fill: Array("abcdefghij".utf8),
          suffix: Array(#""}"#.utf8), total: total)
      }
    case .endlessChunked:
      status = 200
      close = true
      body =
        route == .csv
        ? .endlessChunked(
          prefix: Array("cep,logradouro,complemento,bairro,localidade,uf,ibge\n".utf8),
          fill: Array("99999999,Rua Sem Fim,,Bairro,Cidade,SP,3550308\n".utf8))
        : .endlessChunked(prefix: Array(#"{"padding":""#.utf8), fill: Array("abcdefghij".utf8))
      if route != .csv { contentType = jsonType }
    case .giantHeaders(let bytes):
      headers.append(("X-Mock-Padding", String(repeating: "a", count: max(0, bytes))))
    case .invalidUTF8:
      status = 200
      if route == .csv {
        contentType = csvType
        body = .bytes(
          Array("cep,logradouro,complemento,bairro,localidade,uf,ibge\n01001000,Pra".utf8)
            + [0xC3, 0x28, 0xFF, 0xFE] + Array(",,S\u{E9},S\u{E3}o Paulo,SP,3550308\n".utf8))
      } else {
        contentType = jsonType
        body = .bytes(
          Array(#"{"cep":"01001000","logradouro":"Pra"#.utf8) + [0xC3, 0x28, 0xFF, 0xFE]
            + Array(#"a da S","uf":"SP"}"#.utf8))
      }
    case .successFalse:
      status = 200
      contentType = jsonType
      body = .bytes(
        jsonObject([
          "success": .bool(false), "error": .string("Limite de consultas excedido (simulado)"),
        ]))
    case .brasilAPIOutage:
      status = 404
      contentType = jsonType
      body = .bytes(Providers.brasilAPIOutageBody)
    case .brasilAPIInvalidJSON:
      status = 500
      contentType = jsonType
      body = .bytes(Providers.brasilAPIInvalidJSONBody)
    case .csvBOM, .csvReordered, .csvOmitMissing, .csvDuplicatedRows, .csvMaskedCEPs,
      .csvColumnsShuffled, .csvExtraRows, .csvCRLF, .viaCEPBooleanErro, .normal:
      break
    }
  }

  /// The captive-portal login page of ``MockFault/htmlPortal``.
  static let portalHTML = """
    <!DOCTYPE html>
    <html><head><meta charset="utf-8"><title>Wi-Fi Grátis - Login</title></head>
    <body><h1>Bem-vindo ao Wi-Fi</h1><p>Faça login para continuar navegando.</p>
    <form method="post" action="/login"><input name="email"><button>Entrar</button></form>
    </body></html>

    """
}
