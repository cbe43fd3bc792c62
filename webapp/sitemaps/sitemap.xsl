<?xml version="1.0" encoding="UTF-8"?>
<!-- Renders a sitemap or sitemap index as a table for people who open it in a browser.
     Crawlers ignore the xml-stylesheet instruction that points here. -->
<xsl:stylesheet version="1.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
    xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"
    xmlns:xhtml="http://www.w3.org/1999/xhtml"
    xmlns:display="urn:sitemap-dashboard:display"
    exclude-result-prefixes="sm image video xhtml display">
  <xsl:output method="html" encoding="UTF-8" indent="yes" doctype-system="about:legacy-compat"/>
  <!-- Set by the server-side view: links from an index then lead to the view of each file. -->
  <xsl:param name="folder" select="''"/>
  <xsl:param name="view" select="''"/>
  <!-- Its words: English here (a browser applying this file); the server-side view passes
       them in the reader's language (webapp/views/public/view_words.py). -->
  <xsl:param name="lang" select="'en'"/>
  <xsl:param name="title_urlset" select="'XML sitemap'"/>
  <xsl:param name="title_index" select="'Sitemap index'"/>
  <xsl:param name="note_urlset" select="'This file lists %(count)s URLs. It is meant for search engines; this table is only a view of it.'"/>
  <xsl:param name="note_index" select="'This index lists %(count)s sitemap files. It is meant for search engines; this table is only a view of it.'"/>
  <xsl:param name="col_sitemap" select="'Sitemap'"/>
  <xsl:param name="col_url" select="'URL'"/>
  <xsl:param name="col_lastmod" select="'Last modified'"/>
  <xsl:param name="col_changefreq" select="'Change frequency'"/>
  <xsl:param name="col_priority" select="'Priority'"/>
  <xsl:param name="col_images" select="'Images'"/>
  <xsl:param name="col_videos" select="'Videos'"/>
  <xsl:param name="col_languages" select="'Languages'"/>
  <xsl:template match="/">
    <html lang="{$lang}">
      <head>
        <meta charset="utf-8"/>
        <meta name="viewport" content="width=device-width, initial-scale=1"/>
        <meta name="robots" content="noindex"/>
        <title><xsl:choose><xsl:when test="sm:sitemapindex"><xsl:value-of select="$title_index"/></xsl:when><xsl:otherwise><xsl:value-of select="$title_urlset"/></xsl:otherwise></xsl:choose></title>
        <style>
          body { font: 15px/1.5 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1a1a1a; }
          table { border-collapse: collapse; width: 100%; }
          th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid #ddd; vertical-align: top; }
          th { background: #f3f4f6; position: sticky; top: 0; }
          td.url { overflow-wrap: anywhere; }
          p.note { color: #555; }
          /* A phone: each row a card, each cell labelled with its column's heading. */
          @media (max-width: 40rem) {
            body { margin: 1rem auto; }
            thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
            table, tbody, tr, td { display: block; width: 100%; box-sizing: border-box; }
            tr { border-bottom: 1px solid #ddd; padding: .3rem 0; }
            td { border: none; padding: .1rem .3rem; overflow-wrap: anywhere; }
            td[data-label]::before { content: attr(data-label); display: inline-block; min-width: 7rem; padding-right: .6rem; color: #555; font-size: .85rem; font-weight: 600; }
          }
        </style>
      </head>
      <body>
        <xsl:apply-templates select="sm:urlset | sm:sitemapindex"/>
      </body>
    </html>
  </xsl:template>

  <!-- A URL as a person reads it: decoded by the server-side view (display:url), as written
       where a browser applies this stylesheet; the title holds it as published. -->
  <xsl:template name="loc">
    <xsl:param name="href"/>
    <a href="{$href}" title="{sm:loc}">
      <xsl:choose>
        <xsl:when test="function-available('display:url')"><xsl:value-of select="display:url(string(sm:loc))"/></xsl:when>
        <xsl:otherwise><xsl:value-of select="sm:loc"/></xsl:otherwise>
      </xsl:choose>
    </a>
  </xsl:template>

  <!-- A note with its number where %(count)s stands. -->
  <xsl:template name="note">
    <xsl:param name="text"/>
    <xsl:param name="count"/>
    <p class="note"><xsl:value-of select="substring-before($text, '%(count)s')"/><xsl:value-of select="$count"/><xsl:value-of select="substring-after($text, '%(count)s')"/></p>
  </xsl:template>

  <xsl:template match="sm:sitemapindex">
    <h1><xsl:value-of select="$title_index"/></h1>
    <xsl:call-template name="note"><xsl:with-param name="text" select="$note_index"/><xsl:with-param name="count" select="count(sm:sitemap)"/></xsl:call-template>
    <table>
      <thead><tr><th scope="col"><xsl:value-of select="$col_sitemap"/></th><th scope="col"><xsl:value-of select="$col_lastmod"/></th></tr></thead>
      <tbody>
        <xsl:for-each select="sm:sitemap">
          <tr>
            <td class="url">
              <xsl:variable name="name" select="substring-after(sm:loc, $folder)"/>
              <xsl:choose>
                <xsl:when test="$view != '' and $name != ''">
                  <xsl:call-template name="loc"><xsl:with-param name="href" select="concat($view, $name)"/></xsl:call-template>
                </xsl:when>
                <xsl:otherwise><xsl:call-template name="loc"><xsl:with-param name="href" select="sm:loc"/></xsl:call-template></xsl:otherwise>
              </xsl:choose>
            </td>
            <td data-label="{$col_lastmod}"><xsl:value-of select="sm:lastmod"/></td>
          </tr>
        </xsl:for-each>
      </tbody>
    </table>
  </xsl:template>

  <xsl:template match="sm:urlset">
    <h1><xsl:value-of select="$title_urlset"/></h1>
    <xsl:call-template name="note"><xsl:with-param name="text" select="$note_urlset"/><xsl:with-param name="count" select="count(sm:url)"/></xsl:call-template>
    <table>
      <thead>
        <tr><th scope="col"><xsl:value-of select="$col_url"/></th><th scope="col"><xsl:value-of select="$col_lastmod"/></th><th scope="col"><xsl:value-of select="$col_changefreq"/></th>
          <th scope="col"><xsl:value-of select="$col_priority"/></th><th scope="col"><xsl:value-of select="$col_images"/></th><th scope="col"><xsl:value-of select="$col_videos"/></th><th scope="col"><xsl:value-of select="$col_languages"/></th></tr>
      </thead>
      <tbody>
        <xsl:for-each select="sm:url">
          <tr>
            <td class="url"><xsl:call-template name="loc"><xsl:with-param name="href" select="sm:loc"/></xsl:call-template></td>
            <td data-label="{$col_lastmod}"><xsl:value-of select="sm:lastmod"/></td>
            <td data-label="{$col_changefreq}"><xsl:value-of select="sm:changefreq"/></td>
            <td data-label="{$col_priority}"><xsl:value-of select="sm:priority"/></td>
            <td data-label="{$col_images}"><xsl:value-of select="count(image:image)"/></td>
            <td data-label="{$col_videos}"><xsl:value-of select="count(video:video)"/></td>
            <td data-label="{$col_languages}"><xsl:for-each select="xhtml:link"><xsl:value-of select="@hreflang"/><xsl:text> </xsl:text></xsl:for-each></td>
          </tr>
        </xsl:for-each>
      </tbody>
    </table>
  </xsl:template>
</xsl:stylesheet>
