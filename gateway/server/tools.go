package server

import "github.com/labstack/echo/v4"

// toolRoutes are merge and QR codes (spec 4.2, 4.6).
func (s *Server) toolRoutes(e *echo.Echo) {
}
