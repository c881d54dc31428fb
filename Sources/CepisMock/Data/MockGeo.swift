import Foundation

/// A point on the map with its precision, as in the `geo` object of a cep.is answer.
public struct MockGeo: Sendable, Hashable, Codable {
  /// Latitude in degrees.
  public var lat: Double
  /// Longitude in degrees.
  public var lon: Double
  /// Radius of uncertainty in metres (`raio_m`).
  public var raioM: Int
  /// Precision of the point: `logradouro` (street) or `localidade` (city).
  public var precisao: String

  /// Creates a point.
  public init(lat: Double, lon: Double, raioM: Int, precisao: String) {
    self.lat = lat
    self.lon = lon
    self.raioM = raioM
    self.precisao = precisao
  }

  enum CodingKeys: String, CodingKey {
    case lat
    case lon
    case raioM = "raio_m"
    case precisao
  }
}
