/// The routes served by ``MockServer`` whose answers can be scripted with faults.
public enum MockRoute: String, Sendable, CaseIterable, Codable {
  /// `GET /{cep}`: one address as JSON (cep.is protocol).
  case cep
  /// `GET /csv?ceps=a,b,c`: many addresses as CSV (cep.is protocol).
  case csv
  /// `GET /health`: the service status.
  case health
  /// `GET /cpf/{cpf}` and `GET /v1/cpf/{cpf}`: cpfhub.io protocol.
  case cpf
  /// `GET /ws/{cep}/json/`: one address as ViaCEP answers it (a fallback provider).
  case viaCEP = "viacep"
  /// `GET /api/cep/v2/{cep}`: one address as BrasilAPI's CEP v2 answers it (a fallback
  /// provider).
  case brasilAPI = "brasilapi"

  /// Whether the route is one of the public fallback providers (ViaCEP, BrasilAPI) rather
  /// than cep.is or cpfhub.io. ``MockChaos`` leaves these routes alone.
  public var isFallbackProvider: Bool { self == .viaCEP || self == .brasilAPI }
}
