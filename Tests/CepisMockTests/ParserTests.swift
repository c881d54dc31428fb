import Testing

@testable import CepisMock
