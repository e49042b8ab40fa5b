package server

import "github.com/labstack/echo/v4"

// batchRoutes are batch generation and its progress (spec 4.3-4.5).
func (s *Server) batchRoutes(e *echo.Echo) {
}
