// The dashboard is served by berthd under /ui/: hashed asset names (cached for a year), no
// inline script or style (the Content-Security-Policy allows 'self' only), no source maps.
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/ui/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    target: 'es2022',
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    reportCompressedSize: false,
  },
});
