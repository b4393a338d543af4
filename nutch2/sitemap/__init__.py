"""Sitemaps: parsing sitemap files and fetching them for the sitemap job."""
