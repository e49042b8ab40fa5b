package server

import "github.com/labstack/echo/v4"

// hostedRoutes are the stored-file paths: hosted PDFs (spec 4.10-4.14),
// view/download/metadata (4.7-4.9) and billing (4.15).
func (s *Server) hostedRoutes(e *echo.Echo) {
}
