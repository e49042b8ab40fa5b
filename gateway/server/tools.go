package server

import "github.com/labstack/echo/v4"

// toolRoutes are merge and QR codes (spec 4.2, 4.6), behind an API key like
// the other /pdf endpoints (spec §5.1).
func (s *Server) toolRoutes(e *echo.Echo) {
	e.POST("/pdf/merge", s.merge, s.requireKey)
	e.POST("/pdf/qrcode", s.qrcode, s.requireKey)
}
