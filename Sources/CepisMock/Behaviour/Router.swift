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
